// Package window is the arithmetic gate-e2e and gate-bench judge a ceiling
// with: percentiles of per-second samples, the worst sliding window over
// samples or over commit timestamps, the (N+1)/N bound fixed sub-windows
// allow, and the per-sub-window accounting that matches items forwarded in a
// kv window to that window's final counter value. A budget's own arithmetic
// (count per sub-window, a path's ceiling) is libs/plan's.
package window
