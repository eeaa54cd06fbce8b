package store

import (
	"encoding/json"
	"reflect"
	"testing"
)

// fullGraphStatus is a status with every field set, every list one long.
func fullGraphStatus() GraphStatus {
	return GraphStatus{App: "a", Graph: "g", Version: 3, Running: true, Error: "e", Started: 9,
		Stages: []StageStatus{{Path: "p", Node: "n", Hop: 1, Source: "s", Group: "gr",
			Counters:    Counters{Popped: 1, Admitted: 2, Forwarded: 3},
			LastRefusal: &Refusal{Budget: "b", At: 4},
			Wedge:       &Wedge{Queue: "q", Group: "gr", Partition: "pa", Head: "h", Attempts: 2, Error: "we", Escalated: true},
			Holding:     5,
			Denials:     []DenialCount{{Budget: "b", Reason: "ceiling", Count: 6}},
		}}}
}

// mutateLeaves calls fn once per settable leaf reachable from v (through
// structs, pointers and the first element of slices), after changing that
// leaf; the change is undone before the next.
func mutateLeaves(t *testing.T, v reflect.Value, path string, fn func(path string)) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			mutateLeaves(t, v.Field(i), path+"."+v.Type().Field(i).Name, fn)
		}
	case reflect.Pointer:
		mutateLeaves(t, v.Elem(), path, fn)
	case reflect.Slice:
		mutateLeaves(t, v.Index(0), path+"[0]", fn)
	case reflect.String:
		old := v.String()
		v.SetString(old + "x")
		fn(path)
		v.SetString(old)
	case reflect.Int, reflect.Int64:
		old := v.Int()
		v.SetInt(old + 1)
		fn(path)
		v.SetInt(old)
	case reflect.Bool:
		v.SetBool(!v.Bool())
		fn(path)
		v.SetBool(!v.Bool())
	default:
		t.Fatalf("%s is a %s: teach sameGraphStatus and this test about it", path, v.Kind())
	}
}

// The writer skips a graph whose status is the same as written: any field
// that encodes differently must make the two differ, or a change would
// never reach the status rows. Walked by reflection, so a field added to
// the status later fails here until the comparison knows it.
func TestSameGraphStatusNoticesEveryField(t *testing.T) {
	base := fullGraphStatus()
	if b := fullGraphStatus(); !sameGraphStatus(&base, &b) {
		t.Fatal("two equal statuses compare different")
	}
	baseJSON, _ := json.Marshal(base)
	changed := fullGraphStatus()
	leaves := 0
	mutateLeaves(t, reflect.ValueOf(&changed).Elem(), "GraphStatus", func(path string) {
		leaves++
		j, _ := json.Marshal(changed)
		if string(j) == string(baseJSON) {
			t.Fatalf("changing %s did not change the encoding", path)
		}
		if sameGraphStatus(&base, &changed) {
			t.Errorf("changing %s is not noticed", path)
		}
	})
	t.Logf("%d fields checked", leaves)
	for _, drop := range []func(*StageStatus){
		func(s *StageStatus) { s.LastRefusal = nil },
		func(s *StageStatus) { s.Wedge = nil },
		func(s *StageStatus) { s.Denials = nil },
	} {
		c := fullGraphStatus()
		drop(&c.Stages[0])
		if sameGraphStatus(&base, &c) {
			t.Errorf("a dropped field is not noticed: %+v", c.Stages[0])
		}
	}
	if c := fullGraphStatus(); true {
		c.Stages = nil
		if sameGraphStatus(&base, &c) {
			t.Error("dropped stages are not noticed")
		}
	}
}
