//go:build linux || darwin || freebsd || netbsd || openbsd

package queen

import (
	"net"
	"syscall"
)

// alive reports whether an idle connection can carry a request: the
// broker has not closed it and sent nothing on it since its last answer.
// It peeks at the socket without blocking (one recvfrom).
func alive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	live := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read is the one live answer; end of stream (n 0, no
		// error), unexpected bytes or an error each retire the connection.
		live = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && live
}
