package gateapi

import "github.com/queen-mq/gate/libs/wire"

// The answers of gate-api, as the one definition in libs/wire has them
// (gate-api's handlers write these types; the client reads them).
type (
	// Declared is the declare route's 200 answer.
	Declared = wire.Declared
	// Resolved is the compiled plan in a declare answer.
	Resolved = wire.Resolved
	// ResolvedQueue, ResolvedNode and ResolvedStage are its parts.
	ResolvedQueue = wire.ResolvedQueue
	ResolvedNode  = wire.ResolvedNode
	ResolvedStage = wire.ResolvedStage
	// Budget is one compiled budget of the plan.
	Budget = wire.ResolvedBudget
	// View is the live graph view.
	View = wire.GraphView
	// ViewNode, ViewBudget and ViewStage are its parts.
	ViewNode   = wire.ViewNode
	ViewBudget = wire.ViewBudget
	ViewStage  = wire.ViewStage
	// Counters are a stage's lifetime counters summed across relay
	// replicas: the shape gate-relay publishes.
	Counters = wire.Counters
	// PushBody is the push front door's body; zero fields are not sent.
	PushBody = wire.PushBody
	// Pushed is the push front door's 200 answer.
	Pushed = wire.Pushed
)
