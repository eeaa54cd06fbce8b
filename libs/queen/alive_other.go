//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package queen

import "net"

// alive cannot peek at a socket here: an idle connection is taken as
// live, and a call on one the broker closed fails as on http.Transport.
func alive(net.Conn) bool { return true }
