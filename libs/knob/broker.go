package knob

import "github.com/queen-mq/gate/libs/queen"

// BrokerTimeout bounds every broker call except a pop's long-poll, in
// milliseconds (queen.WithCallTimeout): while the broker hangs, a call fails
// within it instead of waiting.
var BrokerTimeout = Int{Name: "GATE_BROKER_TIMEOUT_MS", Default: int(queen.DefaultCallTimeout.Milliseconds()), Min: MinBrokerTimeoutMs, Max: MaxBrokerTimeoutMs}

// Range of GATE_BROKER_TIMEOUT_MS.
const (
	MinBrokerTimeoutMs = 100
	MaxBrokerTimeoutMs = 300_000
)

// PushBatch is the most front-door pushes one broker push call of gate-api
// carries: pushes that arrive while the door's broker calls are all in
// flight leave together in the next one; 1 gives every push a call of its
// own.
var PushBatch = Int{Name: "GATE_PUSH_BATCH", Default: 64, Min: 1, Max: 1000}

// ItemRecordSeconds is how long gate-api's push door keeps its record of
// an item pushed with a txn (explain by transaction id reads it); 0 turns
// the records off (a push with a txn then costs one kv write less, and
// explain by transaction id answers 404 for every id).
var ItemRecordSeconds = Int{Name: "GATE_ITEM_RECORD_SECONDS", Default: 86400, Min: 0, Max: 7 * 86400}
