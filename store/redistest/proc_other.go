//go:build !linux

package redistest

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// Pausing a process is tested on Linux only (CI); elsewhere Pause skips.
var sigStop, sigCont os.Signal
