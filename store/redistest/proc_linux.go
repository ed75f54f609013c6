package redistest

import "syscall"

// sysProcAttr asks the kernel to stop redis-server when the test binary
// dies, so a crashed or killed test run leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
