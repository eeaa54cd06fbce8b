package push_test

import (
	"bytes"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/gate/gate-api/internal/apitest"
)

// TestMeasurePushRSS is a measurement, not part of the regression run: 32
// concurrent pushes just under 8 MiB into one gate-api, reporting the
// process's resident memory before, at peak and 20 s after. Run it against
// a broker in another process, so the broker's copies are not counted:
//
//	miniqueen -addr 127.0.0.1:16632 &
//	GATE_MEASURE_RSS=1 GATE_TEST_QUEEN_URL=http://127.0.0.1:16632 \
//	  go test ./gate-api/internal/push/ -run TestMeasurePushRSS -v -count=1
//
// Every push must be answered 200 or 503 with Retry-After.
func TestMeasurePushRSS(t *testing.T) {
	if os.Getenv("GATE_MEASURE_RSS") == "" {
		t.Skip("a measurement: set GATE_MEASURE_RSS=1 (and GATE_TEST_QUEEN_URL to a broker in another process)")
	}
	h := apitest.New(t)
	h.Expect(h.Do(http.MethodPut, h.GraphURL("big"), h.Target("big", 100000)), http.StatusOK)
	h.Run("relay-1", "big", 1)
	const size = 8<<20 - 1024
	prefix := `{"partition":"p","payload":{"blob":"`
	suffix := `"}}`
	body := []byte(prefix + strings.Repeat("x", size-len(prefix)-len(suffix)) + suffix)
	runtime.GC()
	before := procStatus(t, "VmRSS")
	var wg sync.WaitGroup
	codes := make([]int, 32)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, h.URL+h.GraphURL("big")+"/nodes/limit/push", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
				t.Errorf("503 without Retry-After")
			}
		}()
	}
	wg.Wait()
	peak := procStatus(t, "VmHWM")
	time.Sleep(20 * time.Second)
	after := procStatus(t, "VmRSS")
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
		if c != http.StatusOK && c != http.StatusServiceUnavailable {
			t.Errorf("push answered %d", c)
		}
	}
	t.Logf("32 pushes of %d bytes: answers %v; RSS before %d MB, peak %d MB, 20 s after %d MB", len(body), count, before>>10, peak>>10, after>>10)
}

// procStatus reads one kB figure of /proc/self/status.
func procStatus(t *testing.T, field string) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
