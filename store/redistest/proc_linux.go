package redistest

import (
	"os"
	"syscall"
)

// sysProcAttr asks the kernel to stop redis-server when the test binary
// dies, so a crashed or killed test run leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// The signals of Server.Pause and Server.Resume.
var sigStop, sigCont os.Signal = syscall.SIGSTOP, syscall.SIGCONT
