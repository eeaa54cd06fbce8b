package recorder

import (
	"encoding/json"
	"testing"

	"github.com/queen-mq/gate/libs/handover"
)

// Whatever a kv row holds, turning it into a history batch never panics
// and only writes what the row names.
func FuzzToBatch(f *testing.F) {
	f.Add([]byte(`{"v":1,"kind":"samples","recorder":"r","app":"a","graph":"g","node":"n","path":"p","session":5,"samples":[[1000,2,3]]}`))
	f.Add([]byte(`{"v":1,"kind":"watch","recorder":"r","watch":{"started":1,"until":2,"through":3,"lost":4}}`))
	f.Add([]byte(`{"v":1,"kind":"rollup","recorder":"r","minute":60000,"lanes":[{"path":"p","admitted":1,"denied":2,"cost":3.5}]}`))
	f.Add([]byte(`{"v":1,"kind":"traces","recorder":"r","traces":[{"seq":1,"at":5,"path":"p","outcome":"denied","budgetId":"b"}]}`))
	f.Add([]byte(`{"v":1,"kind":"watch","recorder":"r"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		e := handover.Entry{Key: "hist:r:x", Version: 1}
		if err := json.Unmarshal(raw, &e.Row); err != nil {
			e.Err = err
		}
		b := ToBatch([]handover.Entry{e})
		if e.Err != nil && !b.Empty() {
			t.Fatalf("an unreadable row wrote %+v", b)
		}
		for _, s := range b.Samples {
			if s.Recorder != e.Row.Recorder {
				t.Fatalf("sample of recorder %q from row of %q", s.Recorder, e.Row.Recorder)
			}
		}
		for _, tr := range b.Traces {
			if tr.Ref == "" {
				t.Fatal("a trace without a ref")
			}
		}
	})
}
