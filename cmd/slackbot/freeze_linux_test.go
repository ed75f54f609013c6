package main

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// freeze stops p (SIGSTOP) and returns once the kernel reports it
// stopped. Signal returns when the signal is queued, not delivered: until
// one of p's threads takes it and the group stop completes, p's other
// threads run on (for long, on a loaded host). The stop is reported to
// p's parent, this test, when every thread has stopped; WNOWAIT leaves
// the report for exec.Cmd.Wait.
func (p *proc) freeze() error {
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("SIGSTOP: %w", err)
	}
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.cmd.Process.Pid, &info, unix.WSTOPPED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
