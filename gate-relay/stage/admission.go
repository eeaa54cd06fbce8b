package stage

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/queen-mq/gate/libs/budget"
)

// Admission is one relay's choice of admission path, shared by all its
// stages. Riders (the charge inside the settle transaction) are used only
// after a positive probe proved the broker applies them; a failed probe, a
// commit whose rider slots do not check out, or a kv_disabled answer
// switches the relay to the separate kv call and logs why once. The zero
// value and nil are the separate path, never probed.
type Admission struct {
	riders   atomic.Bool
	enabled  bool
	log      *slog.Logger
	mu       sync.Mutex
	why      string
	probed   bool
	switched atomic.Int64
}

// NewAdmission returns the path choice: riders wanted (GATE_ADMISSION
// riders) still start on the separate path until Probe succeeds.
func NewAdmission(riders bool, log *slog.Logger) *Admission {
	if log == nil {
		log = slog.Default()
	}
	return &Admission{enabled: riders, log: log}
}

// Riders reports whether claims charge as transaction riders now.
func (a *Admission) Riders() bool { return a != nil && a.riders.Load() }

// Mode is "riders" or "separate", with the reason of the last switch to the
// separate path ("" when riders run or were never wanted).
func (a *Admission) Mode() (mode, why string) {
	if a.Riders() {
		return "riders", ""
	}
	if a == nil {
		return "separate", ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.enabled && !a.probed && a.why == "" {
		return "separate", NotProbedYet
	}
	return "separate", a.why
}

// NotProbedYet is Mode's reason while riders are wanted but the broker has
// not answered the first probe: the relay is on the separate path only
// until then, unlike a relay configured for it (whose reason is "").
const NotProbedYet = "riders wanted (GATE_ADMISSION riders) but not yet probed; the separate kv call is used until the broker proves it applies them"

// Switches counts the switches from riders to the separate path.
func (a *Admission) Switches() int64 {
	if a == nil {
		return 0
	}
	return a.switched.Load()
}

// Off switches to the separate path, logging why once per switch.
func (a *Admission) Off(why string) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.why = why
	a.mu.Unlock()
	if a.riders.CompareAndSwap(true, false) {
		a.switched.Add(1)
		a.log.Warn("admission switched to the separate kv call: the broker's riders cannot be trusted to charge", "why", why)
	}
}

// Probe asks the broker to prove it applies riders; riders are used from a
// positive answer until the next switch. Call it at start and after any
// broker change (an outage, a new address).
func (a *Admission) Probe(ctx context.Context, l *budget.Limiter, tx budget.Transactor, key string) error {
	if a == nil || !a.enabled {
		return nil
	}
	err := l.ProbeRiders(ctx, tx, key)
	a.mu.Lock()
	a.probed = true
	known := err != nil && a.why == err.Error()
	if err != nil {
		a.why = err.Error()
	}
	a.mu.Unlock()
	if err != nil {
		if a.riders.CompareAndSwap(true, false) {
			a.switched.Add(1)
		}
		if !known {
			a.log.Warn("the broker did not prove it applies transaction riders; admission uses the separate kv call", "error", err)
		}
		return err
	}
	if a.riders.CompareAndSwap(false, true) {
		a.mu.Lock()
		a.why = ""
		a.mu.Unlock()
		a.log.Info("the broker applies transaction riders; admission rides the settle transaction")
	}
	return nil
}
