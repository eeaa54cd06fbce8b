// Package config reads gate-recorder's knobs.
package config

import (
	"errors"
	"net"
	"time"

	"github.com/queen-mq/gate/libs/knob"
)

// Config is every gate-recorder knob.
type Config struct {
	// QueenURL and KVNamespace are where the relays hand over (QUEEN_URL,
	// GATE_KV_NAMESPACE).
	QueenURL, KVNamespace string
	// History is the PostgreSQL connection (PG_HOST … PG_URL,
	// GATE_HISTORY_SCHEMA).
	History knob.History
	// Flush is how often the handover is drained (GATE_RECORDER_FLUSH_MS,
	// 10000, 1000..60000).
	Flush time.Duration
	// LogLevel is GATE_LOG_LEVEL.
	LogLevel string
	// Bind is where /health answers (GATE_RECORDER_BIND, 127.0.0.1:8792;
	// "off" serves nothing).
	Bind string
}

// Bind is GATE_RECORDER_BIND.
var Bind = knob.Text{Name: "GATE_RECORDER_BIND", Default: "127.0.0.1:8792", Check: checkBind}

func checkBind(v string) string {
	if v == "off" {
		return ""
	}
	if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
		return "is not host:port; set it to e.g. 127.0.0.1:8792, or off"
	}
	return ""
}

// FlushMs is GATE_RECORDER_FLUSH_MS.
var FlushMs = knob.Int{Name: "GATE_RECORDER_FLUSH_MS", Default: 10000, Min: 1000, Max: 60000}

// Load reads every knob through getenv; every unreadable knob is reported.
func Load(getenv func(string) string) (Config, error) {
	var c Config
	var errs []error
	var err error
	c.QueenURL, err = knob.QueenURL.Read(getenv)
	errs = append(errs, err)
	c.KVNamespace, err = knob.KVNamespace.Read(getenv)
	errs = append(errs, err)
	c.LogLevel, err = knob.LogLevel.Read(getenv)
	errs = append(errs, err)
	c.History, err = knob.ReadHistory(getenv)
	errs = append(errs, err)
	ms, err := FlushMs.Read(getenv)
	errs = append(errs, err)
	c.Flush = time.Duration(ms) * time.Millisecond
	c.Bind, err = Bind.Read(getenv)
	errs = append(errs, err)
	return c, errors.Join(errs...)
}
