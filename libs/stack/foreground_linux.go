package stack

import (
	"os"
	"os/signal"
	"syscall"
	"unsafe"
)

// Foreground makes the calling process the one the terminal's Ctrl-C
// reaches: when standard input is a terminal whose foreground process
// group is the caller's, it moves the caller into a process group of its
// own and makes that group the terminal's foreground group. Under `make
// run`, make then no longer receives the SIGINT of a Ctrl-C (make, on a
// SIGINT, waits for its child and then kills itself with the signal, so
// the shell saw 130 however cleanly gate-run stopped); gate-run alone
// gets it, stops what it started and exits 0, and so does make. restore
// gives the terminal back to the original group; call it before exiting.
// Without a terminal (CI, tests, a pipe), or when the caller is not in
// the foreground, it does nothing.
func Foreground() (restore func()) {
	noop := func() {}
	fd := int(os.Stdin.Fd())
	fg, err := tcgetpgrp(fd)
	if err != nil || fg != syscall.Getpgrp() {
		return noop
	}
	if err := syscall.Setpgid(0, 0); err != nil {
		return noop
	}
	// The caller's group is a background one until the tcsetpgrp below,
	// and a background group that changes the terminal gets SIGTTOU.
	signal.Ignore(syscall.SIGTTOU)
	if err := tcsetpgrp(fd, syscall.Getpgrp()); err != nil {
		_ = syscall.Setpgid(0, fg)
		signal.Reset(syscall.SIGTTOU)
		return noop
	}
	return func() {
		_ = tcsetpgrp(fd, fg)
		signal.Reset(syscall.SIGTTOU)
	}
}

func tcgetpgrp(fd int) (int, error) {
	var pgrp int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); errno != 0 {
		return 0, errno
	}
	return int(pgrp), nil
}

func tcsetpgrp(fd, pgrp int) error {
	p := int32(pgrp)
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&p))); errno != 0 {
		return errno
	}
	return nil
}
