package agent

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// callState records, for one provider call, what the transport saw: the
// HTTP status and whether the reply ran past the cap. The SDKs' errors are
// not inspected (their messages may quote the provider's body).
type callState struct {
	mu       sync.Mutex
	status   int
	tooLarge bool
}

func (s *callState) setStatus(code int) {
	s.mu.Lock()
	s.status = code
	s.mu.Unlock()
}

func (s *callState) setTooLarge() {
	s.mu.Lock()
	s.tooLarge = true
	s.mu.Unlock()
}

func (s *callState) read() (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status, s.tooLarge
}

type stateKey struct{}

func withState(ctx context.Context) (context.Context, *callState) {
	st := &callState{}
	return context.WithValue(ctx, stateKey{}, st), st
}

// newHTTPClient is the provider HTTP client: timeout per call, redirects
// not followed (the 3xx is answered as it is and fails as unavailable), the
// reply body capped at limit bytes.
func newHTTPClient(timeout time.Duration, limit int64) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &http.Client{
		Timeout:   timeout,
		Transport: &capped{next: base, limit: limit},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// capped is a RoundTripper that records the status and caps the body.
type capped struct {
	next  http.RoundTripper
	limit int64
}

func (c *capped) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	st, _ := r.Context().Value(stateKey{}).(*callState)
	if st != nil {
		st.setStatus(resp.StatusCode)
	}
	if resp.ContentLength > c.limit {
		_ = resp.Body.Close()
		if st != nil {
			st.setTooLarge()
		}
		return nil, errTooLarge
	}
	resp.Body = &cappedBody{rc: resp.Body, left: c.limit, st: st}
	return resp, nil
}

type cappedBody struct {
	rc   io.ReadCloser
	left int64
	st   *callState
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One more byte would be over the cap: find out whether there is one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			if b.st != nil {
				b.st.setTooLarge()
			}
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// failure turns a failed call into a *ProviderError from what the
// transport and the call's context saw.
func failure(provider string, callCtx context.Context, st *callState) *ProviderError {
	status, tooLarge := st.read()
	switch {
	case tooLarge:
		return &ProviderError{Provider: provider, Class: ClassTooLarge, Status: status}
	case callCtx.Err() != nil:
		return &ProviderError{Provider: provider, Class: ClassTimeout}
	case status >= 200 && status < 300:
		return &ProviderError{Provider: provider, Class: ClassMalformed, Status: status}
	case status != 0:
		return &ProviderError{Provider: provider, Class: classOf(status), Status: status}
	}
	return &ProviderError{Provider: provider, Class: ClassUnavailable}
}
