-- Shadow limits per key (issue 27): while a shadow candidate has a scoped
-- (scopeBy) or op-filtered (whenOp) budget, the relays record per second,
-- node and path the items per scope value and op the candidate needs, at
-- most GATE_SHADOW_KEYS_PER_SECOND distinct a node a second; the items of
-- further ones are one overflow row (overflow = true, scope and op empty).
-- gate-recorder judges the candidate's per-key counters and op-filtered
-- budgets from these rows beside watch_samples' totals; the hourly
-- retention deletes them after three hours (libs/history
-- KeySampleRetention): only the evaluation about a minute later reads them.
--
-- shadow_minutes gains what the evaluation could not judge exactly
-- (approximate: items judged without their values) and, per scoped budget,
-- the items that carried no value at its scopeBy (missing).

-- +goose Up
CREATE TABLE shadow_key_samples (
    application text NOT NULL,
    graph       text NOT NULL,
    node        text NOT NULL,
    path        text NOT NULL,
    session     bigint NOT NULL,   -- the recording session (watch.startedAt or the candidate's since)
    recorder    text NOT NULL,
    second      bigint NOT NULL,   -- start of the second, ms
    scope       text NOT NULL,     -- {"payload.field": "value" | null, ...} of the candidate's scopeBy fields; '' when none
    op          text NOT NULL,     -- the item's op when some budget is op-filtered, else ''
    overflow    boolean NOT NULL,  -- the items past the cap on distinct values (scope and op '')
    items       bigint NOT NULL,
    cost        bigint NOT NULL,
    PRIMARY KEY (recorder, path, second, overflow, scope, op)
);
CREATE INDEX shadow_key_samples_graph_second ON shadow_key_samples (application, graph, second);

ALTER TABLE shadow_minutes
    ADD COLUMN approximate bigint NOT NULL DEFAULT 0,
    ADD COLUMN missing jsonb NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE shadow_minutes DROP COLUMN missing, DROP COLUMN approximate;
DROP TABLE shadow_key_samples;
