package httpapi

import (
	"io"
	"net/http"
	"strings"
	"time"
)

// What a refusal reads of a body it did not take, so that a client that
// writes its whole request before it reads (Python's http.client, many
// producers' SDKs) reads the refusal instead of a reset: net/http alone
// reads at most 256 KiB of an unread body and then closes, and a client
// still writing into a closed socket sees ECONNRESET.
const (
	// DrainBytes is the most of a refused body read and thrown away: the
	// largest body any route may be configured to take (64 MiB,
	// GATE_MAX_PUSH_BODY_BYTES's ceiling). Past it the connection is
	// closed as net/http closes it.
	DrainBytes = 64 << 20
	// DrainTimeout bounds the time a refused body is read for.
	DrainTimeout = 10 * time.Second
)

// DrainBody reads the rest of r's body (at most DrainBytes, for at most
// DrainTimeout) and throws it away, so the refusal written next reaches a
// client that sends its whole body before reading the answer. A request
// that asked "Expect: 100-continue" and whose body nothing has read is left
// alone: net/http never invited that body, and the client reads the
// refusal instead of sending it. It holds no memory beyond a copy buffer.
func DrainBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	if strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		return
	}
	drain(w, r.Body)
}

// drain reads body to its end (bounded) with a read deadline on the
// connection, then clears the deadline again.
func drain(w http.ResponseWriter, body io.Reader) {
	rc := http.NewResponseController(w)
	// A socket's deadline is the operating system's wall clock, never the
	// injected one.
	_ = rc.SetReadDeadline(time.Now().Add(DrainTimeout))
	_, _ = io.CopyN(io.Discard, body, DrainBytes)
	_ = rc.SetReadDeadline(time.Time{})
}

// trackedBody is a request body that knows whether it was read at all and
// whether it was read to its end, and runs restart (when set) once, at its
// end.
type trackedBody struct {
	io.ReadCloser
	restart func()
	started bool
	ended   bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	b.started = true
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.ended {
		b.ended = true
		if b.restart != nil {
			b.restart()
		}
	}
	return n, err
}

// drainRefused drains what a refused request left of its body: nothing
// when the handler read it to its end (or failed reading it), nothing for
// an uninvited 100-continue body, else the rest, bounded.
func drainRefused(w http.ResponseWriter, r *http.Request, b *trackedBody) {
	if b == nil || b.ended {
		return
	}
	if !b.started && strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		return
	}
	drain(w, readerOnly{b})
}

// readerOnly hides everything but Read (io.CopyN must not find a
// WriterTo that bypasses the tracking).
type readerOnly struct{ io.Reader }
