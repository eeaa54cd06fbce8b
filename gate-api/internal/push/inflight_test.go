package push

import (
	"net/http"
	"testing"
)

// The push door's byte bound: bodies reserve their length (the route limit
// when unannounced); one that does not fit is a 503 with Retry-After, and
// a release makes room again.
func TestInflightBytesBoundThePushDoor(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	f := &inflight{limit: 16 * mib}
	r1, bad := f.reserve(8*mib-1, 8*mib)
	if bad != nil {
		t.Fatal(bad)
	}
	r2, bad := f.reserve(-1, 8*mib) // chunked: reserves the limit
	if bad != nil {
		t.Fatal(bad)
	}
	if _, bad := f.reserve(2, 8*mib); bad == nil || bad.Status() != http.StatusServiceUnavailable || bad.Header().Get("Retry-After") != "1" {
		t.Fatalf("a push past the bound: %v, want 503 with Retry-After", bad)
	}
	r1()
	r3, bad := f.reserve(8*mib, 8*mib)
	if bad != nil {
		t.Fatalf("after a release: %v", bad)
	}
	r2()
	r3()
	if f.used.Load() != 0 {
		t.Fatalf("%d bytes still reserved after every release", f.used.Load())
	}
}
