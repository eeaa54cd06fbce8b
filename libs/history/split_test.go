package history

import (
	"reflect"
	"testing"
)

// A range is read from whole sealed hours where it may be and from the
// finer rows everywhere else, each stretch once, adjacent stretches merged.
func TestSplitHoursReadsSealedHoursAndMergesTheRest(t *testing.T) {
	t.Parallel()
	const base = 1_790_000_000_000 / hourMs * hourMs // a whole hour
	at := func(hour, minute int64) int64 { return base + hour*hourMs + minute*60_000 }
	sealed := map[int64]bool{at(0, 0): true, at(1, 0): true, at(3, 0): true}
	since, until := at(0, 30), at(3, 15)
	overlapping := func(_, h int64) bool { return sealed[h] }
	whole := func(c, h int64) bool { return c == h && sealed[h] && h+hourMs <= until }
	for _, tc := range []struct {
		name       string
		since      int64
		until      int64
		sealedAt   func(c, h int64) bool
		wantHours  []int64
		wantRanges [][2]int64
	}{
		{"every sealed hour the range overlaps", since, until, overlapping,
			[]int64{at(0, 0), at(1, 0), at(3, 0)}, [][2]int64{{at(2, 0), at(3, 0)}}},
		{"only sealed hours wholly inside the range", since, until, whole,
			[]int64{at(1, 0)}, [][2]int64{{at(0, 30), at(1, 0)}, {at(2, 0), at(3, 15)}}},
		{"nothing sealed: one stretch", since, until, func(_, _ int64) bool { return false },
			nil, [][2]int64{{since, until}}},
		{"an empty range", until, until, overlapping, nil, nil},
	} {
		hours, ranges := splitHours(tc.since, tc.until, tc.sealedAt)
		if !reflect.DeepEqual(hours, tc.wantHours) || !reflect.DeepEqual(ranges, tc.wantRanges) {
			t.Errorf("%s: hours %v ranges %v, want %v and %v", tc.name, hours, ranges, tc.wantHours, tc.wantRanges)
		}
	}
	if h, r := splitSealed(sealed, since, until); !reflect.DeepEqual(h, []int64{at(0, 0), at(1, 0), at(3, 0)}) || len(r) != 1 {
		t.Errorf("splitSealed: hours %v ranges %v, want every overlapping sealed hour", h, r)
	}
}
