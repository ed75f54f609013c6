package mcptools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stopGrace is how long a stdio server is given to exit after its stdin is
// closed, and again after SIGTERM, before it is killed.
const stopGrace = 5 * time.Second

// commandTransport runs a stdio server as mcp.CommandTransport does, but
// reads what the server writes through the guard's limit on each message:
// CommandTransport reads its stdout itself, with no bound of ours.
type commandTransport struct {
	cmd *exec.Cmd
	g   *guard
}

// Connect starts the command and speaks newline-delimited JSON-RPC over
// its stdin and stdout.
func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	tr := &mcp.IOTransport{
		// Closing stdin, not stdout, ends the session (see child.Close).
		Reader: io.NopCloser(t.g.reader(stdout, &jsonValues{})),
		Writer: &child{cmd: t.cmd, stdin: stdin, stdout: stdout, g: t.g},
		// The SDK's own bound, above ours: it counts what its decoder
		// reads ahead, ours each message exactly.
		MaxLineLength: int(2 * t.g.max),
	}
	return tr.Connect(ctx)
}

// child is a running stdio server's stdin; closing it stops the server as
// the MCP specification says: stdin closed, then SIGTERM, then SIGKILL,
// each after a grace period, waiting for the process to exit.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Closer
	g      *guard
}

func (c *child) Write(p []byte) (int, error) { return c.stdin.Write(p) }

func (c *child) Close() error {
	if err := c.stdin.Close(); err != nil {
		return fmt.Errorf("close the server's stdin: %w", err)
	}
	if c.g.tripped() != nil {
		// Cut off in the middle of a message it may still be writing:
		// its write fails at once, rather than blocking until SIGTERM.
		_ = c.stdout.Close()
	}
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-exited:
			return err, true
		case <-time.After(stopGrace):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if c.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill the server: %w", err)
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("the server does not exit")
}
