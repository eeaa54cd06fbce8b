package insight

import (
	"net/url"
	"testing"

	"github.com/queen-mq/gate/libs/httpapi"
	"github.com/queen-mq/gate/libs/wire"
)

// FuzzSimulateQuery: any query string is parsed into in-range numbers or a
// 422 naming the field (code invalid-query); nothing panics.
func FuzzSimulateQuery(f *testing.F) {
	for _, s := range []string{"count=10&timeMs=1000", "minutes=99999", "count=-1", "count=1&count=2", "subWindows=%zz", "minutes=1e3", "count=9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		for _, name := range []string{"count", "timeMs", "subWindows"} {
			if _, _, bad := httpapi.QueryInt(v, name); bad != nil && (bad.Status() != 422 || bad.Body().Field != name || bad.Code() != wire.CodeInvalidQuery) {
				t.Fatalf("%s: %+v", name, bad)
			}
		}
		m, bad := httpapi.QueryClamped[int64](v, "minutes", simDefaultMin, 1, simMaxMinutes)
		if bad == nil && (m < 1 || m > simMaxMinutes) {
			t.Fatalf("minutes %d out of [1, %d]", m, simMaxMinutes)
		}
		if bad != nil && (bad.Status() != 422 || bad.Body().Field != "minutes" || bad.Code() != wire.CodeInvalidQuery) {
			t.Fatalf("minutes: %+v", bad)
		}
	})
}
