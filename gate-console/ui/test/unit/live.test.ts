// The page's own check on a stream that says "stream": counters must keep
// coming, or after the console's quiet period and a slack it polls.
import { test } from "node:test";
import assert from "node:assert/strict";
import { quietFor, watchdogSlackMs } from "../../src/lib/live";

test("a stream that keeps sending counters is trusted", () => {
  assert.equal(quietFor("stream", 1000, 15000, 1000 + 15000 + watchdogSlackMs), null);
});

test("a stream silent past the quiet period and the slack is not", () => {
  assert.equal(quietFor("stream", 1000, 15000, 1000 + 15000 + watchdogSlackMs + 1), 15000 + watchdogSlackMs + 1);
});

test("when the console already says poll, the page polls on its word", () => {
  assert.equal(quietFor("poll", 0, 15000, 10_000_000), null);
  assert.equal(quietFor("", 0, 15000, 10_000_000), null);
});

test("an older console without quiet_ms is trusted as before", () => {
  assert.equal(quietFor("stream", 0, 0, 10_000_000), null);
});
