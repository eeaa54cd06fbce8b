-- History: minute roll-ups, denial traces, per-second Watch samples,
-- Watch recorders, queue snapshots and configuration annotations
-- (gate-runtime §5.5, §6.2). Times are Unix milliseconds (bigint).

-- +goose Up

-- Per stage per minute: summed across relay replicas. The recorder adds
-- the difference between what a source (one relay recorder) reported for
-- the minute and what it reported before (rollup_sources), so independent
-- replicas add up and replaying a handover changes nothing.
CREATE TABLE rollups (
    application text NOT NULL,
    target      text NOT NULL,             -- graph.node
    lane        text NOT NULL,             -- the path
    minute      bigint NOT NULL,           -- start of the minute, ms
    admitted    bigint NOT NULL DEFAULT 0,
    denied      bigint NOT NULL DEFAULT 0, -- deferred + released
    calls       bigint NOT NULL DEFAULT 0,
    throttled   bigint NOT NULL DEFAULT 0,
    cost_est    double precision NOT NULL DEFAULT 0,
    cost_actual double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (application, target, lane, minute)
);
CREATE INDEX rollups_target_minute ON rollups (application, target, minute DESC) INCLUDE (admitted, cost_est);
CREATE INDEX rollups_minute ON rollups (minute);

-- What each source last reported per stage and minute (its running total
-- for that minute on that replica).
CREATE TABLE rollup_sources (
    recorder    text NOT NULL,
    application text NOT NULL,
    target      text NOT NULL,
    lane        text NOT NULL,
    minute      bigint NOT NULL,
    admitted    bigint NOT NULL DEFAULT 0,
    denied      bigint NOT NULL DEFAULT 0,
    cost_est    double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (recorder, application, target, lane, minute)
);
CREATE INDEX rollup_sources_minute ON rollup_sources (minute);

-- Denials drained from the relays' rings; ref (recorder id and sequence)
-- makes a replayed handover insert nothing twice.
CREATE TABLE traces (
    id          bigserial PRIMARY KEY,
    at          bigint NOT NULL,
    application text NOT NULL,
    target      text NOT NULL,
    lane        text NOT NULL,
    op          text NOT NULL DEFAULT '',
    outcome     text NOT NULL,
    budget_id   text NOT NULL DEFAULT '',
    calls       bigint NOT NULL DEFAULT 0,
    ref         text UNIQUE
);
CREATE INDEX traces_at ON traces (at DESC);
CREATE INDEX traces_outcome_at ON traces (outcome, at DESC);

-- Per-second Watch samples per recorder and path, range-partitioned by UTC
-- day on second; libs/history creates the day partitions ahead and drops
-- expired ones (retention never DELETEs rows here).
CREATE TABLE watch_samples (
    application text NOT NULL,
    graph       text NOT NULL,
    node        text NOT NULL,
    path        text NOT NULL,
    session     bigint NOT NULL,           -- watch.startedAt
    recorder    text NOT NULL,
    second      bigint NOT NULL,           -- start of the second, ms
    items       bigint NOT NULL,
    cost        bigint NOT NULL,
    PRIMARY KEY (recorder, path, second)
) PARTITION BY RANGE (second);
CREATE INDEX watch_samples_node_second ON watch_samples (application, graph, node, session, second);

-- One row per relay recorder (replica x runtime x node) of a Watch.
CREATE TABLE watch_recorders (
    recorder    text PRIMARY KEY,
    application text NOT NULL,
    graph       text NOT NULL,
    node        text NOT NULL,
    session     bigint NOT NULL,
    started     bigint NOT NULL,
    through     bigint NOT NULL,
    lost        bigint NOT NULL DEFAULT 0
);
CREATE INDEX watch_recorders_node ON watch_recorders (application, graph, node, session);
CREATE INDEX watch_recorders_through ON watch_recorders (through);

-- Once-a-minute queue snapshots per node.
CREATE TABLE snapshots (
    application text NOT NULL,
    graph       text NOT NULL,
    node        text NOT NULL,
    minute      bigint NOT NULL,
    at          bigint NOT NULL,
    body        jsonb NOT NULL,
    PRIMARY KEY (application, graph, node, minute)
);
CREATE INDEX snapshots_at ON snapshots (at);

-- Configuration annotations written by a successful declare.
CREATE TABLE config_events (
    id          bigserial PRIMARY KEY,
    application text NOT NULL,
    graph       text NOT NULL,
    at          bigint NOT NULL,
    body        jsonb NOT NULL
);
CREATE INDEX config_events_graph_at ON config_events (application, graph, at DESC);
CREATE INDEX config_events_at ON config_events (at);

-- +goose Down
DROP TABLE config_events;
DROP TABLE snapshots;
DROP TABLE watch_recorders;
DROP TABLE watch_samples;
DROP TABLE traces;
DROP TABLE rollup_sources;
DROP TABLE rollups;
