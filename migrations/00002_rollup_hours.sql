-- Sealed hours of minute roll-ups: per target and hour the items, cost,
-- peak minute cost and recorded minutes, written by gate-recorder's hourly
-- pass once an hour can no longer change (relays buffer at most an hour),
-- so a 30-day Watch summary reads 720 rows per node instead of 43,200.

-- +goose Up
CREATE TABLE rollup_hours (
    application text NOT NULL,
    target      text NOT NULL,
    hour        bigint NOT NULL,           -- start of the hour, ms
    items       bigint NOT NULL,
    cost        double precision NOT NULL,
    peak_cost   double precision NOT NULL, -- the largest minute's cost
    minutes     integer NOT NULL,          -- minutes with a roll-up row
    PRIMARY KEY (application, target, hour)
);
CREATE INDEX rollup_hours_hour ON rollup_hours (hour);

-- Hours already sealed (for every target at once).
CREATE TABLE rollup_seals (
    hour bigint PRIMARY KEY
);

-- +goose Down
DROP TABLE rollup_seals;
DROP TABLE rollup_hours;
