package gatetest

import "go.uber.org/goleak"

// IgnoreIdleConns are the goleak options of every Gate package whose tests
// talk HTTP to a broker or a server through a shared transport:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(m, gatetest.IgnoreIdleConns()...) }
//
// An idle keep-alive connection parks one goroutine in each of net/http's
// persistConn loops until the transport's idle timeout or the server
// closes it. A server the test stopped closes it at once, but a broker
// that outlives the tests (a real Queen at GATE_TEST_QUEEN_URL) does not:
// those goroutines are net/http's, not a leak of the code under test.
// Nothing else is ignored.
func IgnoreIdleConns() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
	}
}
