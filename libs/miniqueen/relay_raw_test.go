package miniqueen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// rawRelay runs the relay pattern with a plain net/http client: wildcard
// pop of up to 200, then one transaction of kv incr + acks + pushes.
type rawRelay struct {
	url    string
	client *http.Client
}

type rawPopMsg struct {
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	LeaseID       string          `json:"leaseId"`
	Data          json.RawMessage `json:"data"`
}

func (r *rawRelay) step(src, dst, group string) (int, error) {
	resp, err := r.client.Get(r.url + "/api/v1/pop/queue/" + src + "?batch=200&wait=true&timeout=50&consumerGroup=" + group + "&subscriptionMode=all&leaseSeconds=10")
	if err != nil {
		return 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	if resp.StatusCode == http.StatusNoContent {
		return 0, nil
	}
	var pop struct {
		LeaseID  string      `json:"leaseId"`
		Messages []rawPopMsg `json:"messages"`
	}
	if err := json.Unmarshal(body, &pop); err != nil {
		return 0, err
	}
	n := len(pop.Messages)
	var b bytes.Buffer
	b.WriteString(`{"operations":[`)
	for i, m := range pop.Messages {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"ack","transactionId":%q,"partitionId":%q,"leaseId":%q,"consumerGroup":%q,"status":"completed"}`, m.TransactionID, m.PartitionID, m.LeaseID, group)
	}
	b.WriteString(`,{"type":"push","items":[`)
	for i, m := range pop.Messages {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"queue":%q,"partition":%q,"payload":%s,"transactionId":%q}`, dst, m.Partition, m.Data, "fwd-"+m.TransactionID)
	}
	fmt.Fprintf(&b, `]}],"requiredLeases":[%q],"kv":[{"op":"incr","ns":"gate","key":"budget","delta":%d,"ttlSeconds":60,"max":1000000000000}]}`, pop.LeaseID, n)
	resp, err = r.client.Post(r.url+"/api/v1/transaction", "application/json", &b)
	if err != nil {
		return 0, err
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	if !bytes.Contains(body, []byte(`"success":true`)) {
		return 0, fmt.Errorf("transaction failed: %.300s", body)
	}
	return n, nil
}

func fillQueue(tb testing.TB, url, queue string, partitions, n int) {
	tb.Helper()
	client := &http.Client{}
	for done := 0; done < n; {
		var b bytes.Buffer
		b.WriteString(`{"items":[`)
		k := min(1000, n-done)
		for i := 0; i < k; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"queue":%q,"partition":"p%d","payload":{"op":"price.update","cost":1,"seq":%d},"transactionId":"in-%d"}`, queue, (done+i)%partitions, done+i, done+i)
		}
		b.WriteString("]}")
		resp, err := client.Post(url+"/api/v1/push", "application/json", &b)
		if err != nil {
			tb.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			tb.Fatalf("push: %d", resp.StatusCode)
		}
		done += k
	}
	client.CloseIdleConnections()
}

// BenchmarkRelayPatternRawHTTP measures the relay pattern with a
// hand-rolled net/http client (independent of libs/queen).
func BenchmarkRelayPatternRawHTTP(b *testing.B) {
	s := RunT(b)
	const workers = 2
	const partitions = 16
	fillQueue(b, s.URL(), "src", partitions, b.N)
	tr := &http.Transport{MaxIdleConnsPerHost: workers * 2}
	defer tr.CloseIdleConnections()
	var moved atomic.Int64
	cpu0 := cpuTime()
	b.ResetTimer()
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &rawRelay{url: s.URL(), client: &http.Client{Transport: tr}}
			for moved.Load() < int64(b.N) {
				n, err := r.step("src", "dst", "relay")
				if err != nil {
					firstErr.Store(err)
					return
				}
				moved.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err, ok := firstErr.Load().(error); ok {
		b.Fatal(err)
	}
	b.ReportMetric(float64(moved.Load())/b.Elapsed().Seconds(), "items/s")
	// The process CPU time (client and broker together) is reported too:
	// on a shared, loaded machine it is the steadier figure.
	b.ReportMetric(float64(moved.Load())/(cpuTime()-cpu0).Seconds(), "items/cpu-s")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
