package observe

import "testing"

// A stage keeps at most maxSeconds distinct seconds: the oldest go first
// and their items are counted as lost; a late second is kept in order.
func TestStageBufferBound(t *testing.T) {
	b := newStageBuf("p", 0)
	for s := int64(0); s < 10; s++ {
		b.addSecond(s*1000, s+1, 2*(s+1), 5)
	}
	if len(b.order) != 5 || b.order[0] != 5000 || b.lost != 1+2+3+4+5 {
		t.Fatalf("kept %v lost %d, want seconds 5..9 and 15 lost", b.order, b.lost)
	}
	b.addSecond(7000, 1, 1, 5) // same second: adds, drops nothing
	if c := b.seconds[7000]; c.items != 9 || c.cost != 17 || b.lost != 15 {
		t.Fatalf("second 7: %+v lost %d", c, b.lost)
	}
	b.addSecond(6500, 1, 1, 6) // between: inserted in order
	for i := 1; i < len(b.order); i++ {
		if b.order[i-1] >= b.order[i] {
			t.Fatalf("order broken: %v", b.order)
		}
	}
	// Forgetting a committed row drops only the seconds it held unchanged.
	b.forgetSamples([][3]int64{{5000, 6, 12}, {7000, 8, 16}})
	if _, ok := b.seconds[5000]; ok {
		t.Fatal("committed second 5 kept")
	}
	if _, ok := b.seconds[7000]; !ok {
		t.Fatal("second 7 grew after the row was written and was forgotten anyway")
	}
	blocks := b.blocks(9000)
	n := 0
	for _, s := range blocks {
		n += len(s)
	}
	// Complete before 9 s: 6, 6.5, 7 and 8 (5 was committed).
	if n != 4 {
		t.Fatalf("blocks before 9 s hold %d seconds, want 4: %v", n, blocks)
	}
}

// Minutes are bounded too, oldest first.
func TestStageBufferMinutes(t *testing.T) {
	b := newStageBuf("p", 0)
	for m := int64(0); m < 70; m++ {
		b.addMinute(m*60000, 1, 0, 1, 60)
	}
	if len(b.minutes) != 60 {
		t.Fatalf("%d minutes kept, want 60", len(b.minutes))
	}
	if _, ok := b.minutes[9*60000]; ok {
		t.Fatal("minute 9 kept past the bound")
	}
}
