package observe

import (
	"sort"

	"github.com/queen-mq/gate/libs/handover"
)

// cell is one second or minute of one stage.
type cell struct {
	items, cost int64
}

// minuteCell is one minute of one stage.
type minuteCell struct {
	admitted, denied int64
	cost             float64
}

// stageBuf is what one stage (path at a node) holds.
type stageBuf struct {
	path      string
	pathIndex int
	// seconds: second start (ms) → items and cost; order keeps them
	// ascending for dropping the oldest.
	seconds map[int64]*cell
	order   []int64
	lost    int64
	minutes map[int64]*minuteCell
	// lastDenied is deferred + released at the previous flush (-1 before
	// the first one).
	lastDenied int64
	// keys are the keyed counts per second (keys.go), keyOrder their
	// seconds ascending, keyCells the cells held.
	keys     map[int64]*keySecond
	keyOrder []int64
	keyCells int
}

func newStageBuf(path string, index int) *stageBuf {
	return &stageBuf{path: path, pathIndex: index, seconds: map[int64]*cell{}, minutes: map[int64]*minuteCell{}, lastDenied: -1, keys: map[int64]*keySecond{}}
}

// addSecond records items and cost in second sec, then drops the oldest
// seconds past maxSeconds, counting their items as lost.
func (b *stageBuf) addSecond(sec int64, items, cost int64, maxSeconds int) {
	c, ok := b.seconds[sec]
	if !ok {
		c = &cell{}
		b.seconds[sec] = c
		if n := len(b.order); n == 0 || b.order[n-1] < sec {
			b.order = append(b.order, sec)
		} else {
			i := sort.Search(n, func(i int) bool { return b.order[i] >= sec })
			b.order = append(b.order, 0)
			copy(b.order[i+1:], b.order[i:])
			b.order[i] = sec
		}
	}
	c.items += items
	c.cost += cost
	for len(b.order) > maxSeconds {
		old := b.order[0]
		b.order = b.order[1:]
		b.lost += b.seconds[old].items
		delete(b.seconds, old)
	}
}

// addMinute adds to minute m, dropping the oldest minutes past maxMinutes.
func (b *stageBuf) addMinute(m int64, admitted, denied int64, cost float64, maxMinutes int) {
	c, ok := b.minutes[m]
	if !ok {
		c = &minuteCell{}
		b.minutes[m] = c
	}
	c.admitted += admitted
	c.denied += denied
	c.cost += cost
	for len(b.minutes) > maxMinutes {
		oldest := int64(-1)
		for k := range b.minutes {
			if oldest < 0 || k < oldest {
				oldest = k
			}
		}
		delete(b.minutes, oldest)
	}
}

// blocks groups the complete seconds (before through) by minute block.
func (b *stageBuf) blocks(through int64) map[int64][][3]int64 {
	out := map[int64][][3]int64{}
	for _, s := range b.order {
		if s >= through {
			break
		}
		c := b.seconds[s]
		blk := s - s%60000
		out[blk] = append(out[blk], [3]int64{s, c.items, c.cost})
	}
	return out
}

// forgetSamples drops the seconds a committed row held, when unchanged.
func (b *stageBuf) forgetSamples(samples [][3]int64) {
	drop := map[int64]bool{}
	for _, s := range samples {
		if c, ok := b.seconds[s[0]]; ok && c.items == s[1] && c.cost == s[2] {
			delete(b.seconds, s[0])
			drop[s[0]] = true
		}
	}
	if len(drop) == 0 {
		return
	}
	kept := b.order[:0]
	for _, s := range b.order {
		if !drop[s] {
			kept = append(kept, s)
		}
	}
	b.order = kept
}

// forgetMinute drops a committed complete minute, when unchanged.
func (b *stageBuf) forgetMinute(m int64, l handover.Lane) {
	if c, ok := b.minutes[m]; ok && c.admitted == l.Admitted && c.denied == l.Denied && c.cost == l.Cost {
		delete(b.minutes, m)
	}
}
