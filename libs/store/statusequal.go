package store

import "slices"

// SameGraphStatus reports whether a and b say the same thing: every field,
// the stages' counters, refusals, wedges and denial counts included. A
// status publisher compares a graph's status with the one it last wrote
// this way instead of encoding both: at thousands of graphs the encoding
// was most of an idle relay's CPU.
func SameGraphStatus(a, b GraphStatus) bool {
	return a.App == b.App && a.Graph == b.Graph && a.Version == b.Version && a.Running == b.Running &&
		a.Error == b.Error && a.Started == b.Started && slices.EqualFunc(a.Stages, b.Stages, sameStageStatus)
}

func sameStageStatus(a, b StageStatus) bool {
	return a.Path == b.Path && a.Node == b.Node && a.Hop == b.Hop && a.Source == b.Source && a.Group == b.Group &&
		a.Counters == b.Counters && samePtr(a.LastRefusal, b.LastRefusal) && samePtr(a.Wedge, b.Wedge) &&
		a.Holding == b.Holding && slices.Equal(a.Denials, b.Denials)
}

// samePtr is true when both are nil or both point at equal values.
func samePtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// CloneGraphStatus copies g deeply (stages, refusals, wedges, denial
// counts), so a caller that changes what it handed over cannot change the
// copy.
func CloneGraphStatus(g GraphStatus) GraphStatus {
	g.Stages = slices.Clone(g.Stages)
	for i := range g.Stages {
		s := &g.Stages[i]
		s.LastRefusal = clonePtr(s.LastRefusal)
		s.Wedge = clonePtr(s.Wedge)
		s.Denials = slices.Clone(s.Denials)
	}
	return g
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
