package stack

import "syscall"

// sysProcAttr puts a child in its own process group (so the whole group can
// be signalled) and asks the kernel to kill it if the launcher dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
