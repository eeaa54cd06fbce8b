package queen

import (
	"strings"
	"testing"
)

// A thin claim of a big batch — one item answered to a pop of 200, the
// claim a trickle per graph makes — allocates about its own size, not a
// slice of the whole batch (issue 24: 36 KiB per claim before, half of what
// a one-item claim allocated in the relay and its in-process broker).
func TestAOneItemClaimOfABigBatchAllocatesForOneItem(t *testing.T) {
	body := benchClaimAnswer(1)
	per := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cl, err := decodeClaim("/p", 200, body, 1000)
			if err != nil || len(cl.Messages) != 1 {
				b.Fatalf("claim: %v (%d messages)", err, len(cl.Messages))
			}
		}
	}).AllocedBytesPerOp()
	if limit := int64(4 * len(body)); per > limit {
		t.Fatalf("decoding a one-message claim (%d bytes) of a 1000 batch allocated %d bytes, want at most %d", len(body), per, limit)
	}
}

// Messages smaller on the wire than the up-front estimate assumes are all
// decoded, in order (the slice grows).
func TestAClaimOfMessagesSmallerThanTheEstimateDecodesEveryOne(t *testing.T) {
	const n = 50
	var b strings.Builder
	b.WriteString(`{"leaseId":"l","messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":"` + string(rune('a'+i%26)) + `","data":` + string(rune('0'+i%10)) + `}`)
	}
	b.WriteString(`]}`)
	body := []byte(b.String())
	if len(body)/minMessageBytes >= n {
		t.Fatalf("the body (%d bytes) is not smaller than the estimate assumes", len(body))
	}
	cl, err := decodeClaim("/p", 200, body, 200)
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Messages) != n {
		t.Fatalf("decoded %d messages, want %d", len(cl.Messages), n)
	}
	for i, m := range cl.Messages {
		if m.ID != string(rune('a'+i%26)) || string(m.Data) != string(rune('0'+i%10)) {
			t.Fatalf("message %d is %q %s, want %q %c", i, m.ID, m.Data, string(rune('a'+i%26)), rune('0'+i%10))
		}
	}
}
