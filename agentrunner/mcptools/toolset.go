package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
)

// ErrClosed is the cause of the *UnavailableError a tool of a closed
// Toolset returns.
var ErrClosed = errors.New("the toolset is closed")

// errNotConnected is the cause while the first connection attempt runs.
var errNotConnected = errors.New("not connected yet")

// Toolset keeps the current tools of several MCP servers. It connects to
// each server in the background and reconnects with backoff when one goes
// away; lists a server's tools again when the server announces a change
// (notifications/tools/list_changed), on every reconnection and on every
// health check; and closes every session, stopping stdio servers, on Close.
//
// A server that is down does not stop the others: its tools stay listed
// with their last known definitions (none if it never connected) and a
// call fails with an *UnavailableError the model sees, while the Toolset
// keeps trying to reconnect.
//
// The tools a Toolset returns call whichever session of their server is
// current, so a runner built from them keeps working across reconnections.
// What changes is the set of tools, which a runner fixes when it is built:
//
//	for {
//		changed := ts.Changed() // before Tools, so no change is missed
//		runner, err := agentrunner.NewRunner(model, append(ownTools, ts.Tools()...))
//		...use runner until <-changed...
//	}
//
// A Toolset is safe for concurrent use.
type Toolset struct {
	opts    *options
	servers []*server
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu        sync.Mutex
	tools     []*agentrunner.Tool
	sig       string
	changed   chan struct{}
	closeErrs []error
}

// ServerStatus is the state of one server of a Toolset.
type ServerStatus struct {
	Name      string
	Transport string
	Connected bool
	// Tools counts the server's tools offered to the model, the last known
	// ones while it is down.
	Tools int
	// Err is why the server is not connected; nil when it is.
	Err error
}

// server is one MCP server of a Toolset.
type server struct {
	ts        *Toolset
	cfg       Config // references expanded
	transport string
	check     chan struct{} // asks for a health check now

	mu     sync.Mutex
	client *Client // nil while down
	err    error   // why client is nil
	tools  []*agentrunner.Tool
	sig    string
	// offered are tools as an MCP gateway offers them (offer.go).
	offered []*OfferedTool
}

// NewToolset validates every configuration and expands its ${VAR}
// references, then connects to the servers, each in the background, and
// returns once every server has connected or failed its first attempt, or
// ctx is done. A configuration that is invalid, repeats a name or
// references a variable that is not set fails NewToolset with every such
// problem and starts nothing; a server that cannot be reached does not:
// see Status. Close the Toolset to stop it.
func NewToolset(ctx context.Context, servers []Config, opts ...Option) (*Toolset, error) {
	o := newOptions(opts)
	ts := &Toolset{opts: o, changed: make(chan struct{})}
	var errs []error
	names := map[string]bool{}
	for _, cfg := range servers {
		if err := cfg.validate(o.transport == nil); err != nil {
			errs = append(errs, err)
			continue
		}
		if names[cfg.Name] {
			errs = append(errs, fmt.Errorf("%w: MCP server name %q is used twice", ErrInvalidConfig, cfg.Name))
			continue
		}
		names[cfg.Name] = true
		expanded, err := expandConfig(cfg, o.lookupEnv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ts.servers = append(ts.servers, &server{
			ts: ts, cfg: expanded, transport: cfg.Transport(),
			check: make(chan struct{}, 1), err: errNotConnected,
		})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// The servers outlive ctx, which bounds only the first attempts.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ts.cancel = cancel
	first := make(chan struct{}, len(ts.servers))
	for _, s := range ts.servers {
		ts.wg.Go(func() { s.run(runCtx, first) })
	}
	for range ts.servers {
		select {
		case <-first:
		case <-ctx.Done():
			err := ctx.Err()
			return nil, errors.Join(fmt.Errorf("connect MCP servers: %w", err), ts.Close())
		}
	}
	return ts, nil
}

// Tools returns the current tools of every server, in the order of the
// configuration, each server's in the order it lists them.
func (ts *Toolset) Tools() []*agentrunner.Tool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Clone(ts.tools)
}

// Changed returns a channel that is closed when Tools next returns a
// different set of tools (names, descriptions, schemas or approval), which
// is when a runner built from Tools should be rebuilt. Reconnecting to a
// server whose tools are unchanged does not close it.
func (ts *Toolset) Changed() <-chan struct{} {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.changed
}

// Status reports each server's state, in the order of the configuration.
func (ts *Toolset) Status() []ServerStatus {
	out := make([]ServerStatus, 0, len(ts.servers))
	for _, s := range ts.servers {
		s.mu.Lock()
		out = append(out, ServerStatus{
			Name: s.cfg.Name, Transport: s.transport,
			Connected: s.client != nil, Tools: len(s.tools), Err: s.err,
		})
		s.mu.Unlock()
	}
	return out
}

// Close stops reconnecting, closes every session, stopping stdio servers,
// and waits for that to finish. Tools of a closed Toolset fail with an
// *UnavailableError wrapping ErrClosed. It returns the errors of closing
// sessions, such as a stdio server that had to be killed.
func (ts *Toolset) Close() error {
	ts.cancel()
	ts.wg.Wait()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	err := errors.Join(ts.closeErrs...)
	ts.closeErrs = nil
	return err
}

// publish recomputes the tool list from the servers' and signals a change.
func (ts *Toolset) publish() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var (
		all  []*agentrunner.Tool
		sigs []string
	)
	for _, s := range ts.servers {
		s.mu.Lock()
		all = append(all, s.tools...)
		sigs = append(sigs, s.sig)
		s.mu.Unlock()
	}
	sig := strings.Join(sigs, "\x00")
	if sig == ts.sig {
		return
	}
	ts.tools, ts.sig = all, sig
	close(ts.changed)
	ts.changed = make(chan struct{})
}

// run connects, serves and reconnects until ctx ends. It sends on first
// once, after the first attempt.
func (s *server) run(ctx context.Context, first chan<- struct{}) {
	o := s.ts.opts
	log := o.logger.With("mcp_server", s.cfg.Name)
	signalled := false
	signal := func() {
		if !signalled {
			signalled = true
			first <- struct{}{}
		}
	}
	defer signal()

	delay := o.minBackoff
	for {
		err := s.session(ctx, signal, &delay)
		if ctx.Err() != nil {
			s.setState(nil, &UnavailableError{Server: s.cfg.Name, Transport: s.transport, Err: ErrClosed})
			return
		}
		if le := (*LimitError)(nil); errors.As(err, &le) {
			s.withdraw(log, le)
		}
		wait := jitter(delay)
		log.Warn("MCP server unavailable; reconnecting", "transport", s.transport, "err", err, "retry_in", wait)
		signal()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			s.setState(nil, &UnavailableError{Server: s.cfg.Name, Transport: s.transport, Err: ErrClosed})
			return
		case <-t.C:
		}
		delay = min(delay*2, o.maxBackoff)
	}
}

// session makes one connection and serves it until it fails. It resets
// the backoff once the server is up.
func (s *server) session(ctx context.Context, up func(), delay *time.Duration) error {
	o := s.ts.opts
	connCtx, cancel := context.WithTimeout(ctx, o.connectTimeout)
	c, err := connect(connCtx, s.cfg, s.transport, o)
	cancel()
	if err != nil {
		s.setState(nil, err)
		return err
	}
	// Calls may come as soon as the tools are published.
	s.setState(c, nil)
	if err := s.healthy(ctx, c, false); err != nil {
		s.setState(nil, err)
		s.closeClient(ctx, c)
		return err
	}
	*delay = o.minBackoff
	c.logger.Info("MCP server connected", "transport", s.transport, "tools", s.toolCount())
	up()
	err = s.serve(ctx, c)
	s.setState(nil, err)
	s.closeClient(ctx, c)
	return err
}

// serve watches a connection: it ends when the session does, refreshes the
// tools when the server announces a change, and checks the server's health
// periodically and when a call failed for want of it.
func (s *server) serve(ctx context.Context, c *Client) error {
	o := s.ts.opts
	ended := make(chan struct{})
	go func() {
		_ = c.Wait() // returns once the session is closed, at the latest by session
		close(ended)
	}()
	var tick <-chan time.Time
	if o.healthEvery > 0 {
		t := time.NewTicker(o.healthEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ended:
			if b := c.guard.tripped(); b != nil {
				return c.overLimit(b)
			}
			err := errors.New("the session ended")
			if tail := c.stderr.Tail(); tail != "" {
				err = fmt.Errorf("%w; stderr: %s", err, tail)
			}
			return &UnavailableError{Server: s.cfg.Name, Transport: s.transport, Err: err}
		case <-c.ToolsChanged():
			if err := s.healthy(ctx, c, false); err != nil {
				return err
			}
		case <-tick:
			if err := s.healthy(ctx, c, true); err != nil {
				return err
			}
		case <-s.check:
			if err := s.healthy(ctx, c, true); err != nil {
				return err
			}
		}
	}
}

// healthy pings the server if asked to and lists its tools again. Only
// the server being out of reach, over its limits, or not answering in
// time, is an error;
// anything else (a server that cannot list tools) is logged and the
// session goes on with the tools it had.
func (s *server) healthy(ctx context.Context, c *Client, ping bool) error {
	checkCtx, cancel := context.WithTimeout(ctx, s.ts.opts.connectTimeout)
	defer cancel()
	err := func() error {
		if ping {
			if err := c.ping(checkCtx); err != nil {
				return err
			}
		}
		return s.refresh(checkCtx, c)
	}()
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrLimit), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	c.logger.Warn("MCP server: listing tools failed; keeping the last list", "err", err)
	return nil
}

// refresh lists the server's tools and publishes them if they changed.
func (s *server) refresh(ctx context.Context, c *Client) error {
	list, err := c.listTools(ctx)
	if err != nil {
		return err
	}
	tools := buildTools(s.cfg, list, s.call, c.logger)
	offered := offer(s.cfg, list, tools)
	sig := fingerprint(tools) + offeredFingerprint(offered)
	s.mu.Lock()
	same := sig == s.sig
	if !same {
		s.tools, s.sig, s.offered = tools, sig, offered
	}
	s.mu.Unlock()
	if !same {
		s.ts.publish()
	}
	return nil
}

// call runs a tool on the server's current session.
func (s *server) call(ctx context.Context, tool string, args json.RawMessage, meta map[string]any) (any, error) {
	c, err := s.current()
	if err != nil {
		s.observe(err)
		return nil, err
	}
	v, err := c.call(ctx, tool, args, meta)
	s.checkAfter(err)
	s.observe(err)
	return v, err
}

// observe tells the Toolset's call observer (WithCallObserver), if any,
// how a call to the server ended. A *ToolError (a result flagged isError)
// is the server answering: its tool failed, the server did not.
func (s *server) observe(err error) {
	o := s.ts.opts.onCall
	if o == nil {
		return
	}
	if te := (*ToolError)(nil); errors.As(err, &te) {
		err = nil
	}
	o(s.cfg.Name, err)
}

// current returns the server's session, or the *UnavailableError saying
// why there is none.
func (s *server) current() (*Client, error) {
	s.mu.Lock()
	c, cause := s.client, s.err
	s.mu.Unlock()
	if c != nil {
		return c, nil
	}
	var ue *UnavailableError
	if errors.As(cause, &ue) {
		return nil, ue
	}
	return nil, &UnavailableError{Server: s.cfg.Name, Transport: s.transport, Err: cause}
}

// checkAfter asks for a health check when a call failed for want of the
// server.
func (s *server) checkAfter(err error) {
	if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrTimeout) {
		select {
		case s.check <- struct{}{}:
		default: // a check is already due
		}
	}
}

// withdraw takes the tools of a server that went over its limits out of
// the Toolset, until it lists them again within its limits: unlike the
// tools of a server that is only down, they are not kept.
func (s *server) withdraw(log *slog.Logger, le *LimitError) {
	log.Error("MCP server over its limits: its tools are withdrawn until it keeps within them",
		"limit", le.Limit, "max", le.Max, "err", le)
	s.mu.Lock()
	s.tools, s.offered, s.sig = nil, nil, ""
	s.mu.Unlock()
	s.ts.publish()
}

func (s *server) setState(c *Client, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.client, s.err = c, err
}

func (s *server) toolCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tools)
}

// closeClient closes a session. Errors of closing a session that already
// failed (a crashed server's exit status) are only logged; those of
// closing the Toolset are returned by Close.
func (s *server) closeClient(ctx context.Context, c *Client) {
	err := c.Close()
	if err == nil {
		return
	}
	if ctx.Err() == nil {
		c.logger.Debug("MCP server session closed", "err", err)
		return
	}
	c.logger.Warn("MCP server did not close cleanly", "err", err)
	s.ts.mu.Lock()
	s.ts.closeErrs = append(s.ts.closeErrs, err)
	s.ts.mu.Unlock()
}

// fingerprint identifies what the model and the runner see of tools.
func fingerprint(tools []*agentrunner.Tool) string {
	var b strings.Builder
	for _, t := range tools {
		fmt.Fprintf(&b, "%s\x01%s\x01%s\x01%t\x02", t.Name(), t.Description(), t.Schema(), t.NeedsApproval())
	}
	return b.String()
}

// jitter spreads reconnections of several replicas: d/2 to d.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}
