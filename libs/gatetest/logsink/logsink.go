// Package logsink is the log buffer Gate's tests read what a piece logged
// from: safe to write from every goroutine of the code under test while
// the test reads it. It depends on the standard library only, so any
// package's tests may use it without an import cycle.
package logsink

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// Sink collects log output. Its zero value is ready to use.
type Sink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it is safe for concurrent use.
func (s *Sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *Sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// JSON is a logger writing JSON lines into s at every level from Debug.
func (s *Sink) JSON() *slog.Logger {
	return slog.New(slog.NewJSONHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Count is how many JSON lines carry msg as their message.
func (s *Sink) Count(msg string) int {
	return strings.Count(s.String(), `"msg":"`+msg+`"`)
}

// Has reports whether a JSON line carries msg as its message.
func (s *Sink) Has(msg string) bool { return s.Count(msg) > 0 }
