package wire

// Counters are one stage's lifetime counters on one replica, or summed
// over replicas. The zero value is a stage that has done nothing.
type Counters struct {
	// Popped is the messages claimed from the stage's source.
	Popped int64 `json:"popped"`
	// Admitted is the work items whose charge applied and committed.
	Admitted int64 `json:"admitted"`
	// Deferred is the windows cut to a shorter admitted prefix after a
	// refusal.
	Deferred int64 `json:"deferred"`
	// Parked is the park sleeps taken while holding a claim.
	Parked int64 `json:"parked"`
	// Released is the claims given back unsettled (the lease redelivers).
	Released int64 `json:"released"`
	// Forwarded is the work items pushed on in committed settles.
	Forwarded int64 `json:"forwarded"`
	// Commits is the settle transactions committed.
	Commits int64 `json:"commits"`
	// Duplicates is the settles rolled back by a duplicate transaction id.
	Duplicates int64 `json:"duplicates"`
	// Foreign is the messages settled without charge because they belong to
	// another path.
	Foreign int64 `json:"foreign"`
	// Deadlettered is the poison items nacked (dead-lettered after the
	// queue's retry limit).
	Deadlettered int64 `json:"deadlettered"`
	// Leaked is the claims released because a budget call failed.
	Leaked int64 `json:"leaked"`
	// Wedged is the escalations of an ack the broker keeps refusing at one
	// head.
	Wedged int64 `json:"wedged"`
	// CostAdmitted is the cost units of forwarded items.
	CostAdmitted int64 `json:"costAdmitted"`
	// Ambiguous is the settles whose outcome was unknown (the answer was
	// cut or timed out): their charge was kept, never refunded.
	Ambiguous int64 `json:"ambiguous,omitempty"`
	// Held is the claims whose window did not open within a second, kept
	// leased by the stage while its workers went on popping other
	// partitions (each retried when its window opened).
	Held int64 `json:"held,omitempty"`
}

// Add sums o into c, field by field.
func (c *Counters) Add(o Counters) {
	c.Popped += o.Popped
	c.Admitted += o.Admitted
	c.Deferred += o.Deferred
	c.Parked += o.Parked
	c.Released += o.Released
	c.Forwarded += o.Forwarded
	c.Commits += o.Commits
	c.Duplicates += o.Duplicates
	c.Foreign += o.Foreign
	c.Deadlettered += o.Deadlettered
	c.Leaked += o.Leaked
	c.Wedged += o.Wedged
	c.CostAdmitted += o.CostAdmitted
	c.Ambiguous += o.Ambiguous
	c.Held += o.Held
}

// ItemsPerCommit is forwarded/commits, or nil before the first commit.
func (c Counters) ItemsPerCommit() *float64 {
	if c.Commits == 0 {
		return nil
	}
	v := float64(c.Forwarded) / float64(c.Commits)
	return &v
}

// Refusal is the last budget that refused a stage's whole window.
type Refusal struct {
	Budget string `json:"budget"`
	// At is epoch milliseconds.
	At int64 `json:"at"`
}

// Denial is one entry of a relay's denial ring: a window a budget refused.
type Denial struct {
	// At is epoch milliseconds.
	At          int64  `json:"at"`
	Application string `json:"application"`
	Graph       string `json:"graph"`
	Node        string `json:"node"`
	Path        string `json:"path"`
	Op          string `json:"op"`
	Outcome     string `json:"outcome"`
	BudgetID    string `json:"budgetId"`
}

// Refusals is how many times the stage was refused: deferred (a prefix
// cut) + parked (a wait for a window) + held (a longer wait, off the
// worker) + released (a claim given back).
func (c Counters) Refusals() int64 { return c.Deferred + c.Parked + c.Held + c.Released }
