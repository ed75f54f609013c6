package agentrunner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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
)

// Runner runs agents: it asks the model, executes tools, defers the calls
// that need a person or an outside result, and hands those to its handlers.
// A Runner is safe for concurrent runs.
type Runner struct {
	model        Model
	tools        []*Tool
	byName       map[string]*Tool
	handlers     []DeferredHandler
	instructions string
	maxRetries   int
	maxSteps     int
}

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
	r := &Runner{model: model, byName: map[string]*Tool{}, maxRetries: 1, maxSteps: 25}
	for _, t := range tools {
		if _, dup := r.byName[t.name]; dup {
			return nil, fmt.Errorf("runner: two tools named %q", t.name)
		}
		r.byName[t.name] = t
		r.tools = append(r.tools, t)
	}
	for _, o := range opts {
		o(r)
	}
	if model == nil {
		return nil, errors.New("runner: no model")
	}
	return r, nil
}

// Tool returns the tool named name.
func (r *Runner) Tool(name string) (*Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// Tools returns the runner's tools in registration order.
func (r *Runner) Tools() []*Tool { return slices.Clone(r.tools) }

// PendingCalls returns a view of every pending call with the confirmation
// text its tool supplies, approvals first.
func (r *Runner) PendingCalls(req DeferredToolRequests) []PendingToolCall {
	out := make([]PendingToolCall, 0, len(req.Approvals)+len(req.Calls))
	for _, id := range req.IDs() {
		call, _ := req.Call(id)
		p := PendingToolCall{Call: call, Kind: req.Kind(id), Metadata: req.Metadata[id]}
		switch {
		case p.Kind == KindQuestion:
			p.Message, _ = p.Metadata[MetadataQuestion].(string)
		case r.byName[call.ToolName] != nil:
			p.Message = r.byName[call.ToolName].Confirm(call)
		default:
			p.Message = DefaultConfirmation(call)
		}
		out = append(out, p)
	}
	return out
}

// RunInput starts or resumes a run.
type RunInput struct {
	// Prompt is the user's message. It may be empty when resuming.
	Prompt string
	// History is the message history of an earlier run to continue.
	History []Message
	// Results answers the calls the earlier run left pending.
	Results *DeferredToolResults
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
	// Messages is the whole history, to store and resume from.
	Messages []Message `json:"messages"`
}

// run is the state of one call to Run.
type run struct {
	r        *Runner
	id       string
	deps     any
	messages []Message
	retries  map[string]int
	allow    bool
}

// Run runs the agent until the model gives a final answer, or until calls
// are left pending and in.AllowPending is set.
func (r *Runner) Run(ctx context.Context, in RunInput) (*RunResult, error) {
	st := &run{r: r, id: in.RunID, deps: in.Deps, retries: map[string]int{}, allow: in.AllowPending}
	if st.id == "" {
		st.id = newRunID()
	}
	st.messages = slices.Clone(in.History)

	if in.Results != nil {
		pending, err := st.resume(ctx, in.Results, in.Prompt)
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
	return &RunResult{RunID: st.id, Status: status, Output: output, Pending: pending, Messages: st.messages}
}

// resume applies results to the history's unprocessed calls. It returns
// what stays pending (non-empty only when the run allows pending output).
func (st *run) resume(ctx context.Context, results *DeferredToolResults, prompt string) (DeferredToolRequests, error) {
	if len(st.messages) == 0 {
		return DeferredToolRequests{}, ErrEmptyHistory
	}
	unprocessed, done := unprocessedCalls(st.messages)
	if len(unprocessed) == 0 {
		return DeferredToolRequests{}, ErrNoUnprocessedCalls
	}
	// Rebuild the requests the results answer: which kind each call is
	// follows from the answer given, checked against the history.
	req := DeferredToolRequests{Metadata: map[string]map[string]any{}}
	var missing, executed, unknown []string
	pendingIDs := map[string]bool{}
	for _, c := range unprocessed {
		pendingIDs[c.ToolCallID] = true
		_, isApproval := results.Approvals[c.ToolCallID]
		_, isCall := results.Calls[c.ToolCallID]
		switch {
		case isApproval:
			req.Approvals = append(req.Approvals, c)
		case isCall:
			req.Calls = append(req.Calls, c)
		default:
			missing = append(missing, c.ToolCallID)
		}
	}
	for _, ids := range []map[string]bool{keys(results.Approvals), keys(results.Calls)} {
		for id := range ids {
			switch {
			case done[id]:
				executed = append(executed, id)
			case !pendingIDs[id]:
				unknown = append(unknown, id)
			}
		}
	}
	if len(executed) > 0 {
		slices.Sort(executed)
		return DeferredToolRequests{}, fmt.Errorf("%w: %s", ErrAlreadyExecuted, strings.Join(executed, ", "))
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return DeferredToolRequests{}, fmt.Errorf("%w: %s", ErrNotPending, strings.Join(unknown, ", "))
	}
	if len(missing) > 0 && !st.allow {
		return DeferredToolRequests{}, fmt.Errorf("%w: no result for %s", ErrIncompleteResults, strings.Join(missing, ", "))
	}

	parts, deferred, err := st.apply(ctx, req, results)
	if err != nil {
		return DeferredToolRequests{}, err
	}
	// Calls the results leave out stay pending, as approvals: the history
	// cannot tell which kind they were, and approval is the safe default.
	for _, id := range missing {
		c, _ := findCall(st.messages, id)
		deferred.Approvals = append(deferred.Approvals, c)
	}
	parts, pending, err := st.settle(ctx, parts, deferred)
	if err != nil {
		return DeferredToolRequests{}, err
	}
	if prompt != "" {
		parts = append(parts, UserPrompt(prompt))
	}
	if len(parts) > 0 {
		st.messages = append(st.messages, st.request(parts...))
	}
	return pending, nil
}

func keys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// loop asks the model and executes its tool calls until a final answer or
// until calls stay pending.
func (st *run) loop(ctx context.Context) (*RunResult, error) {
	params := RequestParams{Instructions: st.r.instructions}
	for _, t := range st.r.tools {
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
		if len(parts) > 0 {
			st.messages = append(st.messages, st.request(parts...))
		}
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

// settle hands deferred calls to the handlers, in order, and applies what
// they decide, until nothing is deferred or nobody decides any more. What
// stays undecided is returned as pending if the run allows it.
func (st *run) settle(ctx context.Context, parts []Part, deferred DeferredToolRequests) ([]Part, DeferredToolRequests, error) {
	for !deferred.Empty() {
		rc := &RunContext{RunID: st.id, Deps: st.deps, Runner: st.r, Messages: slices.Clone(st.messages)}
		if len(parts) > 0 {
			rc.Messages = append(rc.Messages, st.request(slices.Clone(parts)...))
		}
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
		if decided.Len() == 0 {
			break
		}
		applied, again, err := st.apply(ctx, deferred.without(left), decided)
		if err != nil {
			return nil, DeferredToolRequests{}, err
		}
		parts = append(parts, applied...)
		deferred = left.merge(again)
	}
	if !deferred.Empty() && !st.allow {
		return nil, DeferredToolRequests{}, fmt.Errorf("%w: %s", ErrUndecided, strings.Join(deferred.IDs(), ", "))
	}
	return parts, deferred, nil
}

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
		if !a.Approved {
			parts = append(parts, ToolReturn(c.ToolName, c.ToolCallID, jsonString(a.DenialMessage()), OutcomeDenied))
			continue
		}
		call := c
		if len(a.OverrideArgs) > 0 {
			call.Args = a.OverrideArgs
		}
		out, d, err := st.call(ctx, call, results.Metadata[c.ToolCallID], true)
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
	t, ok := st.r.byName[c.ToolName]
	if !ok {
		names := make([]string, 0, len(st.r.tools))
		for _, t := range st.r.tools {
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
		return callOutcome{Part: ToolReturn(c.ToolName, c.ToolCallID, jsonString("Tool failed: "+err.Error()), OutcomeFailed)}, "", nil
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
