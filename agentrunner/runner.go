package agentrunner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
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

	if in.Results != nil || in.Pending != nil {
		pending, err := st.resume(ctx, in)
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
	return st.loop(ctx)
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

// resume applies in.Results to the history's unprocessed calls, after
// checking that they answer exactly those, and hands what stays deferred to
// the handlers. It returns what stays pending (non-empty only when the run
// allows pending output).
func (st *run) resume(ctx context.Context, in RunInput) (DeferredToolRequests, error) {
	results := in.Results
	if results == nil {
		results = NewDeferredToolResults()
	}
	if len(st.messages) == 0 {
		return DeferredToolRequests{}, ErrEmptyHistory
	}
	unprocessed, done := unprocessedCalls(st.messages)
	if len(unprocessed) == 0 {
		return DeferredToolRequests{}, ErrNoUnprocessedCalls
	}
	pendingIDs := make(map[string]bool, len(unprocessed))
	for _, c := range unprocessed {
		pendingIDs[c.ToolCallID] = true
	}
	var executed, unknown []string
	for _, ids := range [][]string{mapKeys(results.Approvals), mapKeys(results.Calls), mapKeys(results.Metadata), mapKeys(results.AnsweredBy)} {
		for _, id := range ids {
			switch {
			case done[id]:
				executed = append(executed, id)
			case !pendingIDs[id]:
				unknown = append(unknown, id)
			}
		}
	}
	if len(executed) > 0 {
		return DeferredToolRequests{}, fmt.Errorf("%w: %s", ErrAlreadyExecuted, sortedList(executed))
	}
	if len(unknown) > 0 {
		return DeferredToolRequests{}, fmt.Errorf("%w: %s", ErrNotPending, sortedList(unknown))
	}

	var req DeferredToolRequests
	if in.Pending != nil {
		if err := matchHistory(*in.Pending, pendingIDs); err != nil {
			return DeferredToolRequests{}, err
		}
		req = in.Pending.clone()
	} else {
		// The kind of each call follows from the answer given; calls left
		// unanswered stay approvals, the kind that runs nothing unasked.
		req.Metadata = map[string]map[string]any{}
		for _, c := range unprocessed {
			if _, isCall := results.Calls[c.ToolCallID]; isCall {
				req.Calls = append(req.Calls, c)
			} else {
				req.Approvals = append(req.Approvals, c)
			}
		}
	}
	if err := req.Check(results); err != nil {
		return DeferredToolRequests{}, err
	}
	missing := req.Remaining(results)
	if !missing.Empty() && !st.allow {
		return DeferredToolRequests{}, fmt.Errorf("%w: no result for %s", ErrIncompleteResults, strings.Join(missing.IDs(), ", "))
	}

	parts, again, err := st.apply(ctx, req.without(missing), results)
	if err != nil {
		return DeferredToolRequests{}, err
	}
	parts, pending, err := st.settle(ctx, parts, missing.merge(again))
	if err != nil {
		return DeferredToolRequests{}, err
	}
	if in.Prompt != "" {
		parts = append(parts, UserPrompt(in.Prompt))
	}
	st.messages = st.withParts(st.messages, parts)
	return pending, nil
}

// matchHistory checks that pending lists exactly the unprocessed calls.
func matchHistory(pending DeferredToolRequests, unprocessed map[string]bool) error {
	var problems []string
	listed := map[string]bool{}
	for _, id := range pending.IDs() {
		listed[id] = true
		if !unprocessed[id] {
			problems = append(problems, id+" is not an unprocessed call")
		}
	}
	for id := range unprocessed {
		if !listed[id] {
			problems = append(problems, id+" is not in the requests")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrPendingMismatch, sortedList(problems))
	}
	return nil
}

func sortedList(s []string) string {
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ", ")
}

func mapKeys[V any](m map[string]V) []string {
	return slices.Collect(maps.Keys(m))
}

// loop asks the model and executes its tool calls until a final answer or
// until calls stay pending.
func (st *run) loop(ctx context.Context) (*RunResult, error) {
	params := RequestParams{Instructions: st.r.instructions}
	for _, t := range st.tools {
		params.Tools = append(params.Tools, t.Definition())
	}
	for step := 0; ; step++ {
		if step >= st.r.maxSteps {
			return nil, fmt.Errorf("%w (%d)", ErrMaxSteps, st.r.maxSteps)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		resp, err := st.r.model.Request(ctx, st.messages, params)
		if err != nil {
			return nil, fmt.Errorf("model request: %w", err)
		}
		resp.Kind = KindResponse
		resp.RunID = st.id
		if resp.Timestamp.IsZero() {
			resp.Timestamp = time.Now().UTC()
		}
		st.messages = append(st.messages, resp)
		calls := resp.ToolCalls()
		if len(calls) == 0 {
			return st.result(StatusComplete, resp.Text(), nil), nil
		}

		parts := make([]Part, 0, len(calls))
		deferred := DeferredToolRequests{Metadata: map[string]map[string]any{}}
		for _, c := range calls {
			p, d, err := st.call(ctx, c, nil, false)
			if err != nil {
				return nil, err
			}
			if d != "" {
				deferred.add(c, d, p.Metadata)
				continue
			}
			parts = append(parts, p.Part)
		}
		parts, pending, err := st.settle(ctx, parts, deferred)
		if err != nil {
			return nil, err
		}
		st.messages = st.withParts(st.messages, parts)
		if !pending.Empty() {
			return st.result(StatusPending, "", &pending), nil
		}
	}
}

func (d *DeferredToolRequests) add(c ToolCallPart, kind CallKind, md map[string]any) {
	if kind == KindApproval {
		d.Approvals = append(d.Approvals, c)
	} else {
		d.Calls = append(d.Calls, c)
	}
	if md != nil {
		if d.Metadata == nil {
			d.Metadata = map[string]map[string]any{}
		}
		d.Metadata[c.ToolCallID] = md
	}
}

// settle hands deferred calls to the handlers, in order, each seeing only
// what the previous ones left, and applies what they decide. Calls that an
// approved tool defers again go through the handlers in turn. What stays
// undecided is returned as pending if the run allows it; otherwise the run
// fails with ErrUndecided before any decision of that round is applied, so
// no tool runs in a run that is about to fail.
func (st *run) settle(ctx context.Context, parts []Part, deferred DeferredToolRequests) ([]Part, DeferredToolRequests, error) {
	pending := DeferredToolRequests{}
	for !deferred.Empty() && len(st.r.handlers) > 0 {
		rc := &RunContext{RunID: st.id, Deps: st.deps, Runner: st.r, Messages: st.withParts(st.messages, parts)}
		decided := NewDeferredToolResults()
		left := deferred
		for _, h := range st.r.handlers {
			if left.Empty() {
				break
			}
			res, err := h.HandleDeferred(ctx, rc, left)
			if err != nil {
				return nil, DeferredToolRequests{}, fmt.Errorf("deferred tool handler: %w", err)
			}
			if res.Len() == 0 {
				continue
			}
			if err := left.Check(res); err != nil {
				return nil, DeferredToolRequests{}, fmt.Errorf("deferred tool handler: %w", err)
			}
			decided.Merge(res)
			left = left.Remaining(decided)
		}
		if !left.Empty() && !st.allow {
			return nil, DeferredToolRequests{}, fmt.Errorf("%w: %s", ErrUndecided, strings.Join(left.IDs(), ", "))
		}
		pending = pending.merge(left)
		if decided.Len() == 0 {
			deferred = DeferredToolRequests{}
			break
		}
		applied, again, err := st.apply(ctx, deferred.without(left), decided)
		if err != nil {
			return nil, DeferredToolRequests{}, err
		}
		parts = append(parts, applied...)
		deferred = again
	}
	pending = pending.merge(deferred)
	if !pending.Empty() && !st.allow {
		return nil, DeferredToolRequests{}, fmt.Errorf("%w: %s", ErrUndecided, strings.Join(pending.IDs(), ", "))
	}
	return parts, pending, nil
}

// withParts returns msgs with parts added as a request to the model. Parts
// join a request that already follows the last response (a resumed run's
// earlier tool returns), so every result of one response reaches the model
// in one message, as providers require. msgs is not modified.
func (st *run) withParts(msgs []Message, parts []Part) []Message {
	if len(parts) == 0 {
		return slices.Clone(msgs)
	}
	out := slices.Clone(msgs)
	if n := len(out); n > 0 && out[n-1].Kind == KindRequest && slices.ContainsFunc(out, isResponse) {
		last := out[n-1]
		last.Parts = append(slices.Clip(last.Parts), st.request(parts...).Parts...)
		out[n-1] = last
		return out
	}
	return append(out, st.request(slices.Clone(parts)...))
}

func isResponse(m Message) bool { return m.Kind == KindResponse }

// without returns r less the calls in o.
func (r DeferredToolRequests) without(o DeferredToolRequests) DeferredToolRequests {
	drop := map[string]bool{}
	for _, id := range o.IDs() {
		drop[id] = true
	}
	out := DeferredToolRequests{Metadata: map[string]map[string]any{}}
	for _, c := range r.Approvals {
		if !drop[c.ToolCallID] {
			out.add(c, KindApproval, r.Metadata[c.ToolCallID])
		}
	}
	for _, c := range r.Calls {
		if !drop[c.ToolCallID] {
			out.add(c, KindExternal, r.Metadata[c.ToolCallID])
		}
	}
	return out
}

// merge returns r plus the calls of o.
func (r DeferredToolRequests) merge(o DeferredToolRequests) DeferredToolRequests {
	out := r.clone()
	for _, c := range o.Approvals {
		out.add(c, KindApproval, o.Metadata[c.ToolCallID])
	}
	for _, c := range o.Calls {
		out.add(c, KindExternal, o.Metadata[c.ToolCallID])
	}
	return out
}

// apply turns answers into tool returns: approved calls execute (with
// override_args, validated again), denials and failures become returns with
// their outcome, results and answers fill in, retries reach the model.
// Calls that defer again come back in the second result.
func (st *run) apply(ctx context.Context, req DeferredToolRequests, results *DeferredToolResults) ([]Part, DeferredToolRequests, error) {
	var parts []Part
	again := DeferredToolRequests{Metadata: map[string]map[string]any{}}
	for _, c := range req.Approvals {
		a, ok := results.Approvals[c.ToolCallID]
		if !ok {
			continue
		}
		st.record(c.ToolCallID, results)
		if !a.Approved {
			parts = append(parts, ToolReturn(c.ToolName, c.ToolCallID, jsonString(a.DenialMessage()), OutcomeDenied))
			continue
		}
		call := c
		if len(a.OverrideArgs) > 0 {
			call.Args = a.OverrideArgs
			if t, ok := st.byName[c.ToolName]; ok {
				if _, err := t.ValidateArgs(call.Args); err != nil {
					// Pydantic AI's semantics: the model hears of it and may
					// try again; say whose arguments were wrong.
					out, _, err := st.retry(c, "The arguments the approver gave instead do not fit the tool: "+err.Error())
					if err != nil {
						return nil, again, err
					}
					parts = append(parts, out.Part)
					continue
				}
			}
		}
		out, d, err := st.journaled(ctx, call, results.Metadata[c.ToolCallID])
		if err != nil {
			return nil, again, err
		}
		if d != "" {
			again.add(call, d, out.Metadata)
			continue
		}
		parts = append(parts, out.Part)
	}
	for _, c := range req.Calls {
		res, ok := results.Calls[c.ToolCallID]
		if !ok {
			continue
		}
		st.record(c.ToolCallID, results)
		switch {
		case res.Failed:
			parts = append(parts, ToolReturn(c.ToolName, c.ToolCallID, jsonString(res.Message), OutcomeFailed))
		case res.Retry:
			parts = append(parts, RetryPrompt(c.ToolName, c.ToolCallID, res.Message))
		default:
			v := res.Value
			if len(v) == 0 {
				v = json.RawMessage("null")
			}
			parts = append(parts, ToolReturn(c.ToolName, c.ToolCallID, v, OutcomeSuccess))
		}
	}
	return parts, again, nil
}

// record adds the answer to call id to the run's applied results.
func (st *run) record(id string, results *DeferredToolResults) {
	if st.applied == nil {
		st.applied = NewDeferredToolResults()
	}
	if a, ok := results.Approvals[id]; ok {
		st.applied.Approvals[id] = a
	}
	if c, ok := results.Calls[id]; ok {
		st.applied.Calls[id] = c
	}
	if md, ok := results.Metadata[id]; ok {
		st.applied.Metadata[id] = md
	}
	if by, ok := results.AnsweredBy[id]; ok {
		st.applied.AnsweredBy[id] = by
	}
}

// ToolFailedPrefix starts the text the model gets for a tool that returned
// an error: "Tool failed: " and the error.
const ToolFailedPrefix = "Tool failed: "

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// callOutcome is what executing (or trying to execute) one call produced.
type callOutcome struct {
	Part     Part
	Metadata map[string]any
}

// call validates and executes one tool call. It returns the part for the
// model, or the kind the call was deferred as. Only running out of retries
// is an error of the run.
func (st *run) call(ctx context.Context, c ToolCallPart, md map[string]any, approved bool) (callOutcome, CallKind, error) {
	t, ok := st.byName[c.ToolName]
	if !ok {
		names := make([]string, 0, len(st.tools))
		for _, t := range st.tools {
			names = append(names, t.name)
		}
		msg := fmt.Sprintf("Unknown tool name: %q. Available tools: %s", c.ToolName, strings.Join(names, ", "))
		return st.retry(c, msg)
	}
	args, err := t.ValidateArgs(c.Args)
	if err != nil {
		return st.retry(c, err.Error())
	}
	if t.requiresApproval && !approved {
		return callOutcome{}, KindApproval, nil
	}
	tc := &ToolContext{
		RunID: st.id, ToolName: c.ToolName, ToolCallID: c.ToolCallID,
		Approved: approved, Metadata: md, Retry: st.retries[c.ToolName], Deps: st.deps,
	}
	v, err := t.fn(ctx, tc, args)
	var (
		needApproval *ApprovalRequiredError
		deferCall    *CallDeferredError
		retry        *RetryError
	)
	switch {
	case errors.As(err, &needApproval):
		if approved {
			return callOutcome{Part: ToolReturn(c.ToolName, c.ToolCallID,
				jsonString("The tool asked for approval again after it was approved."), OutcomeFailed)}, "", nil
		}
		return callOutcome{Metadata: needApproval.Metadata}, KindApproval, nil
	case errors.As(err, &deferCall):
		kind := KindExternal
		if _, q := deferCall.Metadata[MetadataQuestion]; q {
			kind = KindQuestion
		}
		return callOutcome{Metadata: deferCall.Metadata}, kind, nil
	case errors.As(err, &retry):
		return st.retry(c, retry.Message)
	case err != nil:
		if ctx.Err() != nil {
			return callOutcome{}, "", ctx.Err()
		}
		return callOutcome{Part: ToolReturn(c.ToolName, c.ToolCallID, jsonString(ToolFailedPrefix+err.Error()), OutcomeFailed)}, "", nil
	}
	delete(st.retries, c.ToolName)
	b, err := json.Marshal(v)
	if err != nil {
		return callOutcome{Part: ToolReturn(c.ToolName, c.ToolCallID, jsonString("Tool result is not JSON: "+err.Error()), OutcomeFailed)}, "", nil
	}
	return callOutcome{Part: ToolReturn(c.ToolName, c.ToolCallID, b, OutcomeSuccess)}, "", nil
}

func (st *run) retry(c ToolCallPart, msg string) (callOutcome, CallKind, error) {
	st.retries[c.ToolName]++
	if st.retries[c.ToolName] > st.r.maxRetries {
		return callOutcome{}, "", fmt.Errorf("tool %q %w count of %d: %s", c.ToolName, ErrMaxRetries, st.r.maxRetries, msg)
	}
	return callOutcome{Part: RetryPrompt(c.ToolName, c.ToolCallID, msg)}, "", nil
}
