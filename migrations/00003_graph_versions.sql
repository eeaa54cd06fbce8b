-- The change history of graph documents: one row per document a declare
-- stored (PUT, sync, restore) and per deletion, with who changed it, when,
-- and its diff against the row before it. gate-api writes it right after
-- the kv write (libs/history AddGraphVersion); the recorder's hourly
-- retention keeps a year and always each graph's newest 20 revisions.

-- +goose Up
CREATE TABLE graph_versions (
    application   text NOT NULL,
    graph         text NOT NULL,
    revision      bigint NOT NULL,     -- 1, 2, … per graph, in store order
    at            bigint NOT NULL,     -- when it was stored, ms
    changed_by    text NOT NULL,       -- the console identity, or 'api'
    via           text NOT NULL,       -- 'console' | 'api'
    action        text NOT NULL,       -- 'declare' | 'sync' | 'restore' | 'delete'
    version       bigint,              -- the document's version; NULL for a delete
    etag          text,                -- its entity tag; NULL for a delete
    document      bytea,               -- exactly as stored in kv; NULL for a delete
    restored_from bigint,              -- the revision a restore copied
    summary       text NOT NULL,       -- the diff in one line
    diff          jsonb NOT NULL,      -- wire.Diff against the previous revision
    PRIMARY KEY (application, graph, revision)
);
CREATE INDEX graph_versions_etag ON graph_versions (application, graph, etag);
CREATE INDEX graph_versions_at ON graph_versions (at);

-- +goose Down
DROP TABLE graph_versions;
