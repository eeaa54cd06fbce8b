package store_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/queen-mq/gate/libs/store"
)

// fullGraphStatus sets every field of a graph status, down to each stage's
// counters, refusal, wedge and denial counts, to a non-zero value.
func fullGraphStatus(t *testing.T) store.GraphStatus {
	t.Helper()
	var g store.GraphStatus
	fill(t, reflect.ValueOf(&g).Elem(), 1)
	return g
}

// fill gives every settable leaf of v a distinct non-zero value, allocating
// pointers and two-element slices on the way.
func fill(t *testing.T, v reflect.Value, n int) int {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			n = fill(t, v.Field(i), n)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		n = fill(t, v.Elem(), n)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			n = fill(t, v.Index(i), n)
		}
	case reflect.String:
		v.SetString("s" + string(rune('a'+n%26)))
		n++
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(n))
		n++
	case reflect.Bool:
		v.SetBool(true)
	default:
		t.Fatalf("fill: a %s field; teach the test (and SameGraphStatus) about it", v.Kind())
	}
	return n
}

// clone copies g through JSON, so the copy shares no slice or pointer.
func clone(t *testing.T, g store.GraphStatus) store.GraphStatus {
	t.Helper()
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var out store.GraphStatus
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// leaves calls change once per leaf field of v's type reachable from the
// root: change alters that one field in a fresh copy of the root.
func leaves(t *testing.T, root store.GraphStatus, path []int, v reflect.Value, check func(name string, changed store.GraphStatus)) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			leaves(t, root, append(append([]int(nil), path...), i), v.Field(i), check)
		}
		return
	case reflect.Pointer:
		leaves(t, root, append(append([]int(nil), path...), -1), v.Elem(), check)
		// The pointer itself set to nil is a change too.
	case reflect.Slice:
		leaves(t, root, append(append([]int(nil), path...), -2), v.Index(1), check)
	}
	c := clone(t, root)
	target := reflect.ValueOf(&c).Elem()
	name := target.Type().Name()
	for _, step := range path {
		switch step {
		case -1:
			if target.IsNil() {
				return
			}
			target = target.Elem()
		case -2:
			target = target.Index(1)
		default:
			name += "." + target.Type().Field(step).Name
			target = target.Field(step)
		}
	}
	switch target.Kind() {
	case reflect.Pointer, reflect.Slice:
		target.Set(reflect.Zero(target.Type()))
		name += " (nil)"
	case reflect.String:
		target.SetString(target.String() + "!")
	case reflect.Int, reflect.Int64, reflect.Int32:
		target.SetInt(target.Int() + 1000)
	case reflect.Bool:
		target.SetBool(!target.Bool())
	default:
		return
	}
	check(name, c)
}

// TestSameGraphStatusSeesEveryField: a copy is the same; a copy with any
// one field changed — every field the status type has, found by
// reflection, so a field added later without teaching SameGraphStatus
// fails here — is not, whichever side it is on.
func TestSameGraphStatusSeesEveryField(t *testing.T) {
	t.Parallel()
	g := fullGraphStatus(t)
	if !store.SameGraphStatus(g, clone(t, g)) {
		t.Fatalf("a graph status and its copy differ:\n%+v", g)
	}
	checked := 0
	leaves(t, g, nil, reflect.ValueOf(g), func(name string, changed store.GraphStatus) {
		checked++
		if store.SameGraphStatus(g, changed) || store.SameGraphStatus(changed, g) {
			t.Errorf("changing %s is not seen", name)
		}
	})
	if checked < 30 {
		t.Fatalf("only %d fields were changed; the walk is broken", checked)
	}
}

// TestStatusWriterSeesAChangeMadeInPlace: a caller that changes, in place,
// the status it handed to Write (a stage's counters, refusal, wedge or
// denial counts) gets the changed graph rewritten by the next Write — the
// writer compares against its own copy, never the caller's memory.
func TestStatusWriterSeesAChangeMadeInPlace(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, mini := newMiniStore(t)
	for _, c := range []struct {
		name   string
		change func(g *store.GraphStatus)
	}{
		{"counters", func(g *store.GraphStatus) { g.Stages[1].Counters.Forwarded++ }},
		{"refusal", func(g *store.GraphStatus) { g.Stages[1].LastRefusal.At++ }},
		{"wedge", func(g *store.GraphStatus) { g.Stages[0].Wedge.Attempts++ }},
		{"denials", func(g *store.GraphStatus) { g.Stages[1].Denials[1].Count++ }},
	} {
		w := s.NewStatusWriter("inplace-" + c.name)
		g := fullGraphStatus(t)
		g.Graph = "g-" + c.name
		st := store.RelayStatus{Replica: "inplace-" + c.name, At: 1, Graphs: []store.GraphStatus{g}}
		now := time.Unix(1000, 0)
		if _, err := w.Write(ctx, st, 15*time.Second, now); err != nil {
			t.Fatal(err)
		}
		c.change(&st.Graphs[0])
		out, err := w.Write(ctx, st, 15*time.Second, now.Add(time.Second))
		if err != nil || out.Rows != 3 {
			t.Errorf("%s changed in place: wrote %+v (%v); want the graph's row, its change-log row and the header", c.name, out, err)
		}
		e, _ := mini.KV(s.Namespace(), store.GraphStatusKey(g.App, g.Graph, st.Replica, 0))
		var stored struct {
			Graph store.GraphStatus `json:"graph"`
		}
		if err := json.Unmarshal(e.Value, &stored); err != nil || !store.SameGraphStatus(stored.Graph, st.Graphs[0]) {
			t.Errorf("%s changed in place: the stored row says %s (%v)", c.name, e.Value, err)
		}
	}
}
