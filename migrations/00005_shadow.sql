-- Shadow limits (issue 27): a candidate set of budgets runs beside a
-- graph's enforced document on its recorded per-second traffic. The
-- candidate itself is a kv row (shadow:{app}:{graph}); gate-recorder
-- evaluates it once a minute and writes here what it would have done, and
-- the state it carries to the next minute (the virtual backlog and the
-- counters' open windows). `since` is the candidate's creation (ms): a new
-- candidate starts a new series.

-- +goose Up
CREATE TABLE shadow_minutes (
    application       text NOT NULL,
    graph             text NOT NULL,
    since             bigint NOT NULL,
    node              text NOT NULL,
    minute            bigint NOT NULL,   -- start of the minute, ms
    arrived           bigint NOT NULL,   -- items recorded at the node
    admitted          bigint NOT NULL,   -- items the candidate would have let through
    delayed           bigint NOT NULL,   -- of those, items that waited at least a second
    backlog           bigint NOT NULL,   -- items still waiting at the minute's end
    delay_p50_ms      bigint NOT NULL,
    delay_max_ms      bigint NOT NULL,
    oldest_waiting_ms bigint NOT NULL,
    PRIMARY KEY (application, graph, since, node, minute)
);
CREATE INDEX shadow_minutes_minute ON shadow_minutes (minute);

CREATE TABLE shadow_state (
    application text NOT NULL,
    graph       text NOT NULL,
    since       bigint NOT NULL,
    through     bigint NOT NULL,         -- the next second to evaluate, ms
    state       jsonb NOT NULL,
    updated     bigint NOT NULL,
    PRIMARY KEY (application, graph)
);

-- +goose Down
DROP TABLE shadow_state;
DROP TABLE shadow_minutes;
