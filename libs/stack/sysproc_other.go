//go:build !linux

package stack

import "syscall"

// sysProcAttr puts a child in its own process group so the whole group can
// be signalled.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
