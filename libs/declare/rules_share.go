package declare

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/queen-mq/gate/libs/plan"
)

// shareTolerance is how close to 1.0 a share must be to count as 1.0, and
// the margin share-order allows.
const shareTolerance = 1e-9

func validShare(s float64) bool { return s > 0 && s <= 1 }

func (c *checker) shareRules() {
	d := c.doc
	index := map[string]int{}
	badShare := map[string]bool{}
	for i, p := range d.Paths {
		if _, ok := index[p.Name]; !ok {
			index[p.Name] = i
		}
		if p.Share != nil && !validShare(*p.Share) {
			badShare[p.Name] = true
			c.add(RuleShareRange, pathAt(i, "share"), fmt.Sprintf("path %q has share %s: a share is the fraction of each shared node's counter the path may spend, in (0, 1], not a rate; use e.g. 0.5 for half, or omit it to derive it from priority", p.Name, fmtShare(*p.Share)),
				map[string]float64{"share": finite(*p.Share), "min": 0, "max": 1})
		}
	}
	for _, name := range c.names {
		paths := c.visitors[name]
		if len(paths) < 2 {
			continue
		}
		shares := c.shares[name]
		prio := func(p string) uint32 { return d.Paths[index[p]].Priority }
		top := prio(paths[0])
		for _, p := range paths {
			top = min(top, prio(p))
		}
		ok := false
		for _, p := range paths {
			if prio(p) == top && (math.Abs(shares[p]-1) <= shareTolerance || badShare[p]) {
				ok = true
			}
		}
		if !ok {
			var tied []string
			for _, p := range paths {
				if prio(p) == top {
					tied = append(tied, fmt.Sprintf("%q at %s", p, fmtShare(shares[p])))
				}
			}
			c.add(RuleShareTop, nodeAt(name), fmt.Sprintf("node %q: no path at the top priority %d has share 1 (%s): the headroom above every lower share would belong to nobody; give one of them share 1, or omit its share", name, top, strings.Join(tied, ", ")),
				map[string]float64{"priority": float64(top), "paths": float64(len(tied))})
		}
		// Each less important path is judged against the smallest share
		// of the strictly more important ones, in priority order: one
		// sort, not every pair (a node crossed by thousands of paths).
		byPrio := make([]string, 0, len(paths))
		for _, p := range paths {
			if !badShare[p] {
				byPrio = append(byPrio, p)
			}
		}
		sort.SliceStable(byPrio, func(i, j int) bool { return prio(byPrio[i]) < prio(byPrio[j]) })
		against := map[string]string{}
		minHi := ""
		for i := 0; i < len(byPrio); {
			j := i
			for j < len(byPrio) && prio(byPrio[j]) == prio(byPrio[i]) {
				j++
			}
			if minHi != "" {
				for _, lo := range byPrio[i:j] {
					if shares[lo] > shares[minHi]+shareTolerance {
						against[lo] = minHi
					}
				}
			}
			for _, p := range byPrio[i:j] {
				if minHi == "" || shares[p] < shares[minHi] {
					minHi = p
				}
			}
			i = j
		}
		for _, lo := range paths {
			if hi, bad := against[lo]; bad {
				c.add(RuleShareOrder, pathAt(index[lo], "share"), fmt.Sprintf("node %q: path %q (priority %d, less important) has share %s, above path %q (priority %d) at share %s: the less important path could take capacity the more important one is refused; lower %q's share to at most %s, or swap the priorities", name, lo, prio(lo), fmtShare(shares[lo]), hi, prio(hi), fmtShare(shares[hi]), lo, fmtShare(shares[hi])),
					map[string]float64{"lowPriority": float64(prio(lo)), "lowShare": shares[lo], "highPriority": float64(prio(hi)), "highShare": shares[hi]})
			}
		}
	}
	if d.Watching() {
		return
	}
	for _, name := range c.names {
		n := d.Nodes[name]
		maxCost := n.Cost.Maximum()
		if maxCost < 1 {
			continue
		}
		for _, p := range c.visitors[name] {
			if badShare[p] {
				continue
			}
			share := c.shares[name][p]
			worst, worstID, worstSub := int64(math.MaxInt64), "", int64(0)
			for i := range n.Budgets {
				b := &n.Budgets[i]
				if b.Count < 1 || b.TimeMs < MinTimeMs || (b.SubWindows != nil && (*b.SubWindows < 1 || *b.SubWindows > MaxSubWindows)) {
					continue
				}
				w := plan.Subdivide(b.Count, b.TimeMs, b.SubWindows)
				if w.CountSub < maxCost {
					continue // cost-fits refuses it at any share
				}
				if ceil := plan.Ceiling(w.CountSub, share); ceil < worst {
					worst, worstID, worstSub = ceil, plan.BudgetID(b, i), w.CountSub
				}
			}
			if worstID == "" || worst >= maxCost {
				continue
			}
			c.add(RuleShareRoundsOut, nodeAt(name), fmt.Sprintf("node %q: path %q at share %s of budget %q's %d per sub-window gets a ceiling of round(%d × %s) = %d, below the node's largest item cost %d: that path could never admit its largest item; raise the share or the budget, or lower cost.max", name, p, fmtShare(share), worstID, worstSub, worstSub, fmtShare(share), worst, maxCost),
				map[string]float64{"share": share, "countSub": float64(worstSub), "ceiling": float64(worst), "maxCost": float64(maxCost), "path": float64(index[p])})
		}
	}
}

func fmtShare(s float64) string { return strconv.FormatFloat(s, 'g', -1, 64) }

// finite keeps NaN and infinities out of Numbers (JSON cannot carry them).
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}
