// Package budget is Gate's admission arithmetic over Queen kv: it charges a
// window of items against their counters in one kv batch (incr with max =
// the path's ceiling, TTL = the sub-window, plus a getMany for the window
// ends), refunds what applied when something refused (guarded so a refund
// never lands in a newer window), computes the prefix that fits, and says
// how long a refused handler may park.
//
// The kv call sits behind the small KV interface, so everything but the
// call itself is tested without a broker.
package budget
