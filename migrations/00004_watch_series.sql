-- Sealed hours of per-second Watch samples: per node, path, session and
-- hour, the seconds summed over recorders, packed into one bytea row by
-- gate-recorder's hourly pass once the hour can no longer change (relays
-- buffer at most an hour), so a replay of 24 h of a path reads 24 rows
-- instead of 86,400 (libs/history series.go describes the packing).

-- +goose Up
CREATE TABLE watch_series (
    application text NOT NULL,
    graph       text NOT NULL,
    node        text NOT NULL,
    session     bigint NOT NULL,
    path        text NOT NULL,
    hour        bigint NOT NULL,           -- start of the hour, ms
    seconds     integer NOT NULL,          -- seconds with a sample
    items       bigint NOT NULL,           -- summed over the hour
    body        bytea NOT NULL,
    PRIMARY KEY (application, graph, node, session, path, hour)
);
CREATE INDEX watch_series_hour ON watch_series (hour);

-- Hours of samples already sealed (for every series at once).
CREATE TABLE watch_series_seals (
    hour bigint PRIMARY KEY
);

-- +goose Down
DROP TABLE watch_series_seals;
DROP TABLE watch_series;
