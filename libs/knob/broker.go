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
