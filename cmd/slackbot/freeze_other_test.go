//go:build !linux

package main

import (
	"fmt"
	"syscall"
)

// freeze stops p (SIGSTOP). Without Linux's waitid(WNOWAIT) it returns
// when the signal is queued, so p's threads may run on for a moment: the
// crash tests' "frozen" is exact on Linux only.
func (p *proc) freeze() error {
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("SIGSTOP: %w", err)
	}
	return nil
}
