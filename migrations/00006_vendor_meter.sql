-- The vendor's meter over time: one row per limit a vendor stated for a
-- budget that mirrors its meter (vendorMeter), from the first second
-- gate-recorder saw it in kv to the last. The recorder samples the meter
-- rows every second and writes a row when one appears, changes or goes
-- (libs/history PutVendorSpans); "Try a limit" and the timeline read
-- them. The hourly retention keeps 31 days (by until_ms).

-- +goose Up
CREATE TABLE vendor_meter (
    application      text NOT NULL,
    graph            text NOT NULL,
    node             text NOT NULL,
    budget           text NOT NULL,
    since_ms         bigint NOT NULL, -- when the vendor first stated this limit
    until_ms         bigint NOT NULL, -- when it lapses unless restated (moves when restated)
    ended_ms         bigint,          -- when it went before until_ms (the vendor allowed what is declared again)
    seen_ms          bigint NOT NULL, -- the recorder's last sample that saw it
    limit_count      bigint NOT NULL, -- the vendor's limit per the budget's window
    declared         bigint NOT NULL, -- the budget's count
    time_ms          bigint NOT NULL, -- the budget's window
    vendor_limit     bigint NOT NULL, -- the vendor's own words: its quota …
    vendor_window_ms bigint NOT NULL, -- … and its window (0: unsaid)
    headers          text NOT NULL,
    policy           text NOT NULL DEFAULT '',
    PRIMARY KEY (application, graph, node, budget, since_ms)
);
CREATE INDEX vendor_meter_until ON vendor_meter (until_ms);

-- +goose Down
DROP TABLE vendor_meter;
