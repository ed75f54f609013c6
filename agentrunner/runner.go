package agentrunner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slackapprove/slackbot/receipt"
)

// Errors of Run. Bad resumes fail with these, as Pydantic AI's do.
var (
	// ErrEmptyHistory: results were given without the history they answer.
	ErrEmptyHistory = errors.New("deferred tool results were provided, but the message history is empty")
	// ErrNoUnprocessedCalls: the history has no tool calls awaiting results.
	ErrNoUnprocessedCalls = errors.New("deferred tool results were provided, but the message history does not contain any unprocessed tool calls")
	// ErrAlreadyExecuted: a result names a call that already has a return.
	ErrAlreadyExecuted = errors.New("a result was provided for a tool call that was already executed")
	// ErrUndecided: handlers left calls undecided and the run does not
	// accept pending requests as its output.
	ErrUndecided = errors.New("deferred tool calls were left undecided")
	// ErrMaxRetries: a tool (or the model's choice of tools) kept failing
	// validation.
	ErrMaxRetries = errors.New("exceeded max retries")
	// ErrMaxSteps: the model kept calling tools past the run's step limit.
	ErrMaxSteps = errors.New("exceeded max model requests")
	// ErrNoPrompt: a run needs a prompt, or a history with results.
	ErrNoPrompt = errors.New("a run needs a prompt or a message history")
	// ErrPendingMismatch: RunInput.Pending does not list exactly the
	// history's unprocessed tool calls, so it belongs to another state of
	// the run.
	ErrPendingMismatch = errors.New("the pending requests do not match the unprocessed tool calls of the message history")
)

// Runner runs agents: it asks the model, executes tools, defers the calls
// that need a person or an outside result, and hands those to its handlers.
// A Runner is safe for concurrent runs.
type Runner struct {
	model        Model
	box          *Toolbox
	handlers     []DeferredHandler
	instructions string
	maxRetries   int
	maxSteps     int
	sources      []ToolSource // WithToolSource, added to box by NewRunner
	toolbox      *Toolbox     // WithToolbox
	journal      Journal
	receipts     *receipt.KeySet  // WithReceiptKeys
	now          func() time.Time // WithClock
	observe      ToolObserver     // WithToolObserver
}

// ToolSource supplies tools that may change while the runner lives, such
// as those of MCP servers. Each run takes a snapshot of every source when
// it starts (or resumes), so a tool added later is offered to later runs
// and a pending call resumed from storage finds the tool as it is now.
type ToolSource interface {
	Tools() []*Tool
}

// WithToolSource adds tools from src to those given to NewRunner. A tool of
// src whose name is already taken (by NewRunner's tools or an earlier
// source) is left out.
func WithToolSource(src ToolSource) Option {
	return func(r *Runner) { r.sources = append(r.sources, src) }
}

// WithToolbox runs with the tools of b, shared with whoever else needs
// them (the cards' confirmation texts, edits' schemas); NewRunner's tools
// must then be nil, and WithToolSource is not allowed with it.
func WithToolbox(b *Toolbox) Option { return func(r *Runner) { r.toolbox = b } }

// Option configures a Runner.
type Option func(*Runner)

// WithHandlers sets the deferred-call handlers, outermost first; an
// AskHandler, if any, comes last.
func WithHandlers(h ...DeferredHandler) Option {
	return func(r *Runner) { r.handlers = append(r.handlers, h...) }
}

// WithInstructions sets the system prompt.
func WithInstructions(s string) Option { return func(r *Runner) { r.instructions = s } }

// WithMaxRetries sets how many times in a row a tool may ask for a retry
// (invalid arguments, RetryError) before the run fails; default 1.
func WithMaxRetries(n int) Option { return func(r *Runner) { r.maxRetries = n } }

// WithMaxSteps bounds the model requests of one run; default 25.
func WithMaxSteps(n int) Option { return func(r *Runner) { r.maxSteps = n } }

// NewRunner returns a runner for model with tools. Tool names must be unique.
func NewRunner(model Model, tools []*Tool, opts ...Option) (*Runner, error) {
	r := &Runner{model: model, maxRetries: 1, maxSteps: 25}
	for _, o := range opts {
		o(r)
	}
	if model == nil {
		return nil, errors.New("runner: no model")
	}
	switch {
	case r.toolbox != nil && (len(tools) > 0 || len(r.sources) > 0):
		return nil, errors.New("runner: tools come from its toolbox (WithToolbox), not from NewRunner's arguments or WithToolSource")
	case r.toolbox != nil:
		r.box = r.toolbox
	default:
		box, err := NewToolbox(tools, r.sources...)
		if err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		}
		r.box = box
	}
	return r, nil
}

// Toolbox returns the runner's tools.
func (r *Runner) Toolbox() *Toolbox { return r.box }

// Tool returns the tool named name.
func (r *Runner) Tool(name string) (*Tool, bool) { return r.box.Tool(name) }

// Tools returns the runner's tools: those given to NewRunner in
// registration order, then those of its tool sources.
func (r *Runner) Tools() []*Tool { return r.box.Tools() }

// PendingCalls returns a view of every pending call with the confirmation
// text its tool supplies, approvals first.
func (r *Runner) PendingCalls(req DeferredToolRequests) []PendingToolCall {
	return r.box.PendingCalls(req)
}

// RunInput starts or resumes a run.
type RunInput struct {
	// Prompt is the user's message. It may be empty when resuming.
	Prompt string
	// History is the message history of an earlier run to continue.
	History []Message
	// Results answers the calls the earlier run left pending. It must name
	// only calls of the history's last response that have no result yet,
	// and cover all of them unless AllowPending is set; calls it leaves out
	// then go through the handlers again, and what they leave stays pending.
	Results *DeferredToolResults
	// Pending is the DeferredToolRequests the earlier run ended with
	// (RunResult.Pending). It is optional: with it, results are checked
	// against each call's kind and calls the results leave out stay pending
	// with their kind and metadata; without it, the kind of an answered call
	// follows from where the answer is, and calls left out stay pending as
	// approvals without metadata, since the history cannot tell more.
	Pending *DeferredToolRequests
	// AllowPending lets the run end with status pending when handlers leave
	// calls undecided (stop-the-world); otherwise that fails the run.
	AllowPending bool
	// Deps is handed to tools and handlers.
	Deps any
	// RunID identifies the run; empty means a new random id.
	RunID string
}

// RunStatus is how a run ended.
type RunStatus string

// Run statuses.
const (
	StatusComplete RunStatus = "complete"
	StatusPending  RunStatus = "pending"
)

// RunResult is the outcome of a run.
type RunResult struct {
	RunID  string    `json:"run_id"`
	Status RunStatus `json:"status"`
	// Output is the model's final text when complete.
	Output string `json:"output,omitempty"`
	// Pending lists the undecided calls when pending.
	Pending *DeferredToolRequests `json:"pending,omitempty"`
	// Applied holds every answer this run applied to deferred calls, from
	// RunInput.Results and from the handlers, with its metadata and who gave
	// it (AnsweredBy), so callers can audit who decided what. A call that
	// was approved and then deferred again as an external call has both an
	// approval and a call result. Nil when the run applied no answer.
	Applied *DeferredToolResults `json:"applied,omitempty"`
	// Messages is the whole history, to store and resume from.
	Messages []Message `json:"messages"`
	// Suspended is the token a suspended run (StatusSuspended) waits on;
	// nil otherwise. Pending then lists the calls handed out under it.
	Suspended *Suspension `json:"suspended,omitempty"`
}

// run is the state of one call to Run.
type run struct {
	r        *Runner
	tools    []*Tool          // the tools as the run started
	byName   map[string]*Tool // tools by name
	id       string
	deps     any
	messages []Message
	retries  map[string]int
	allow    bool
	applied  *DeferredToolResults
	// step is the length of the history up to the response whose calls
	// execute (Checkpoint.Step); unsaved says the journal has not seen
	// that history yet.
	step    int
	unsaved bool
}

// Run runs the agent until the model gives a final answer, or until calls
// are left pending and in.AllowPending is set.
func (r *Runner) Run(ctx context.Context, in RunInput) (*RunResult, error) {
	st := &run{r: r, id: in.RunID, deps: in.Deps, retries: map[string]int{}, allow: in.AllowPending}
	st.tools, st.byName = r.box.snapshot()
	if st.id == "" {
		st.id = newRunID()
	}
	st.messages = slices.Clone(in.History)

	res, err := st.start(ctx, in)
	// A journal that knows a later state of the run (another process ran
	// it further, then died) has the run go on from there.
	for range st.r.maxSteps {
		var p *progressError
		if !errors.As(err, &p) {
			break
		}
		st.recordAll(in.Results)
		res, err = st.takeOver(ctx, p)
	}
	return res, err
}

// start resumes the run from in's results, or starts it from in's prompt,
// and goes on with the loop.
func (st *run) start(ctx context.Context, in RunInput) (*RunResult, error) {
	if in.Results != nil || in.Pending != nil {
		st.step = lastResponse(st.messages) + 1
		pending, err := st.resume(ctx, in)
		if res, ok := st.suspended(err); ok {
			return res, nil
		}
		if err != nil {
			return nil, err
		}
		if !pending.Empty() {
			return st.result(StatusPending, "", &pending), nil
		}
	} else {
		if in.Prompt == "" && len(st.messages) == 0 {
			return nil, ErrNoPrompt
		}
		if in.Prompt != "" {
			st.messages = append(st.messages, st.request(UserPrompt(in.Prompt)))
		}
	}
	res, err := st.loop(ctx)
	if sres, ok := st.suspended(err); ok {
		return sres, nil
	}
	return res, err
}

func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (st *run) request(parts ...Part) Message {
	now := time.Now().UTC()
	for i := range parts {
		if parts[i].Timestamp.IsZero() {
			parts[i].Timestamp = now
		}
	}
	return Message{Kind: KindRequest, Parts: parts, Timestamp: now, RunID: st.id}
}

func (st *run) result(status RunStatus, output string, pending *DeferredToolRequests) *RunResult {
	return &RunResult{RunID: st.id, Status: status, Output: output, Pending: pending, Applied: st.applied, Messages: st.messages}
}
