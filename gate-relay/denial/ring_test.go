package denial

import (
	"testing"

	"github.com/queen-mq/gate/libs/store"
)

func TestRingKeepsTheNewestAndDropsTheOldest(t *testing.T) {
	t.Parallel()
	var r Ring
	for i := 0; i < 3; i++ {
		r.Add(store.Denial{At: int64(i)})
	}
	if got := r.Newest(0); len(got) != 3 || got[0].At != 2 || got[2].At != 0 {
		t.Fatalf("newest = %+v, want 2,1,0", got)
	}
	for i := 3; i < Capacity+10; i++ {
		r.Add(store.Denial{At: int64(i)})
	}
	got := r.Newest(0)
	if len(got) != Capacity || got[0].At != Capacity+9 || got[Capacity-1].At != 10 {
		t.Fatalf("a full ring holds %d entries from %d to %d, want %d from %d to 10", len(got), got[0].At, got[len(got)-1].At, Capacity, Capacity+9)
	}
	cursor := r.Total()
	r.Add(store.Denial{At: -1})
	fresh, next := r.Since(cursor)
	if len(fresh) != 1 || fresh[0].At != -1 || next != cursor+1 {
		t.Fatalf("since = %+v %d", fresh, next)
	}
	if fresh, _ := r.Since(next); len(fresh) != 0 {
		t.Fatalf("nothing new, got %+v", fresh)
	}
}
