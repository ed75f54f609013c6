package agentrunner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// DefaultDenialMessage is what the model is told when a call is denied
// without a reason, as in Pydantic AI.
const DefaultDenialMessage = "The tool call was denied."

// NoDecisionPrefix starts the message the model sees for every call whose
// wait ended without an answer (timeout, cancellation, failure).
const NoDecisionPrefix = "No decision on this tool call arrived: "

// CallKind says what a pending call waits for.
type CallKind string

// The kinds of pending call.
const (
	KindApproval CallKind = "approval" // a person's yes or no
	KindQuestion CallKind = "question" // a person's answer to a question
	KindExternal CallKind = "external" // a result produced outside the run
)

// ToolCallPart is a tool call made by the model. Its JSON is Pydantic AI's
// ToolCallPart: unknown fields are accepted and ignored, and Args may be a
// JSON object, a JSON-encoded string holding an object, or null.
type ToolCallPart struct {
	ToolName   string          `json:"tool_name"`
	Args       json.RawMessage `json:"args"`
	ToolCallID string          `json:"tool_call_id"`
}

// ArgsObject returns the call's arguments as a JSON object, decoding the
// string form and mapping null or absent arguments to {}. Arguments that
// are not an object, or that CheckArgs refuses (with its error), are an
// error: every reader of a call's arguments goes through it.
func (p ToolCallPart) ArgsObject() (json.RawMessage, error) {
	return normalizeArgs(p.Args)
}

// ArgsMap returns the call's arguments decoded into a map.
func (p ToolCallPart) ArgsMap() (map[string]any, error) {
	raw, err := p.ArgsObject()
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("tool call %s: args: %w", p.ToolCallID, err)
	}
	return m, nil
}

func normalizeArgs(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("args: %w", err)
		}
		if err := scanArgs(string(raw)); err != nil {
			return nil, err
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return json.RawMessage("{}"), nil
		}
		raw = json.RawMessage(s)
	}
	if raw[0] != '{' || !json.Valid(raw) {
		return nil, errors.New("args: not a JSON object")
	}
	if err := scanArgs(string(raw)); err != nil {
		return nil, err
	}
	return raw, nil
}

// DeferredToolRequests lists the calls a run could not finish by itself.
// Its JSON is Pydantic AI's DeferredToolRequests.
type DeferredToolRequests struct {
	// Calls wait for an external result or for an answer to a question.
	Calls []ToolCallPart `json:"calls"`
	// Approvals wait for a decision.
	Approvals []ToolCallPart `json:"approvals"`
	// Metadata holds per-call data the tool attached when it deferred.
	Metadata map[string]map[string]any `json:"metadata"`
}

// MarshalJSON writes empty lists and maps rather than null, as Pydantic AI does.
func (r DeferredToolRequests) MarshalJSON() ([]byte, error) {
	type plain DeferredToolRequests
	p := plain(r)
	if p.Calls == nil {
		p.Calls = []ToolCallPart{}
	}
	if p.Approvals == nil {
		p.Approvals = []ToolCallPart{}
	}
	if p.Metadata == nil {
		p.Metadata = map[string]map[string]any{}
	}
	return json.Marshal(p)
}

// Empty reports whether nothing is pending.
func (r DeferredToolRequests) Empty() bool {
	return len(r.Calls) == 0 && len(r.Approvals) == 0
}

// IDs returns the tool_call_id of every pending call, approvals first.
func (r DeferredToolRequests) IDs() []string {
	ids := make([]string, 0, len(r.Calls)+len(r.Approvals))
	for _, c := range r.Approvals {
		ids = append(ids, c.ToolCallID)
	}
	for _, c := range r.Calls {
		ids = append(ids, c.ToolCallID)
	}
	return ids
}

// Call returns the pending call with the given id.
func (r DeferredToolRequests) Call(id string) (ToolCallPart, bool) {
	for _, c := range r.Approvals {
		if c.ToolCallID == id {
			return c, true
		}
	}
	for _, c := range r.Calls {
		if c.ToolCallID == id {
			return c, true
		}
	}
	return ToolCallPart{}, false
}

// Kind says what the call with the given id waits for. It returns "" when
// the id is not pending. A deferred call whose metadata has a "question" is a
// question; any other deferred call waits for an external result.
func (r DeferredToolRequests) Kind(id string) CallKind {
	for _, c := range r.Approvals {
		if c.ToolCallID == id {
			return KindApproval
		}
	}
	for _, c := range r.Calls {
		if c.ToolCallID == id {
			if _, ok := r.Metadata[id][MetadataQuestion]; ok {
				return KindQuestion
			}
			return KindExternal
		}
	}
	return ""
}

// MetadataQuestion is the metadata key under which a deferred call carries
// the question a person should answer (see Question).
const MetadataQuestion = "question"

// Remaining returns the requests that results leave undecided.
func (r DeferredToolRequests) Remaining(results *DeferredToolResults) DeferredToolRequests {
	if results == nil {
		return r.clone()
	}
	out := DeferredToolRequests{}
	for _, c := range r.Approvals {
		if _, ok := results.Approvals[c.ToolCallID]; !ok {
			out.Approvals = append(out.Approvals, c)
		}
	}
	for _, c := range r.Calls {
		if _, ok := results.Calls[c.ToolCallID]; !ok {
			out.Calls = append(out.Calls, c)
		}
	}
	out.Metadata = map[string]map[string]any{}
	for _, id := range out.IDs() {
		if md, ok := r.Metadata[id]; ok {
			out.Metadata[id] = md
		}
	}
	return out
}

func (r DeferredToolRequests) clone() DeferredToolRequests {
	return DeferredToolRequests{
		Calls:     slices.Clone(r.Calls),
		Approvals: slices.Clone(r.Approvals),
		Metadata:  maps.Clone(r.Metadata),
	}
}

// BuildResults checks answers against the pending calls and returns them as
// results. Approvals must name pending approvals, calls must name pending
// external calls or questions; every other id is refused, and the error names
// it. With approveAll, pending approvals not in approvals are approved.
func (r DeferredToolRequests) BuildResults(approvals map[string]ApprovalResult, calls map[string]CallResult, approveAll bool) (*DeferredToolResults, error) {
	res := NewDeferredToolResults()
	for id, a := range approvals {
		res.Approvals[id] = a
	}
	for id, c := range calls {
		res.Calls[id] = c
	}
	if approveAll {
		for _, c := range r.Approvals {
			if _, ok := res.Approvals[c.ToolCallID]; !ok {
				res.Approvals[c.ToolCallID] = Approve()
			}
		}
	}
	if err := r.Check(res); err != nil {
		return nil, err
	}
	return res, nil
}

// Check returns an error wrapping ErrNotPending and naming every id in
// results that is not pending under the right kind: approvals must answer
// approvals, calls must answer external calls or questions. It does not
// require results to cover every call (see Remaining). Nil results pass.
func (r DeferredToolRequests) Check(results *DeferredToolResults) error {
	if results == nil {
		return nil
	}
	var bad []string
	for id := range results.Approvals {
		if r.Kind(id) != KindApproval {
			bad = append(bad, "approval "+id)
		}
	}
	for id := range results.Calls {
		if k := r.Kind(id); k != KindExternal && k != KindQuestion {
			bad = append(bad, "call "+id)
		}
	}
	for id := range results.Metadata {
		if r.Kind(id) == "" {
			bad = append(bad, "metadata "+id)
		}
	}
	for id := range results.AnsweredBy {
		if r.Kind(id) == "" {
			bad = append(bad, "answered_by "+id)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("%w: %s", ErrNotPending, strings.Join(bad, ", "))
	}
	return nil
}

// ErrNotPending is returned when an answer names a tool call that is not
// pending (or is pending under another kind).
var ErrNotPending = errors.New("answer names tool calls that are not pending")

// ErrIncompleteResults is returned when results leave pending calls
// undecided and the run does not accept leftover requests as its output.
var ErrIncompleteResults = errors.New("results must cover every pending tool call")

// DeferredToolResults answers pending calls. Its JSON is Pydantic AI's
// DeferredToolResults plus answered_by: every key is optional on input and
// all four are present on output.
//
// The fields are in Pydantic AI's order, so the JSON written here is byte
// for byte what Pydantic AI writes for the same answers.
type DeferredToolResults struct {
	// Calls maps tool_call_id to an external result or an answer.
	Calls map[string]CallResult `json:"calls"`
	// Approvals maps tool_call_id to a decision.
	Approvals map[string]ApprovalResult `json:"approvals"`
	// Metadata maps tool_call_id to data the tool sees in its ToolContext.
	Metadata map[string]map[string]any `json:"metadata"`
	// AnsweredBy maps tool_call_id to who decided: a Slack user id,
	// "policy:<route>", an API client, ...
	AnsweredBy map[string]string `json:"answered_by"`
}

// NewDeferredToolResults returns empty results with every map allocated.
func NewDeferredToolResults() *DeferredToolResults {
	return &DeferredToolResults{
		Approvals:  map[string]ApprovalResult{},
		Calls:      map[string]CallResult{},
		Metadata:   map[string]map[string]any{},
		AnsweredBy: map[string]string{},
	}
}

// MarshalJSON writes all four keys, empty rather than null.
func (r DeferredToolResults) MarshalJSON() ([]byte, error) {
	type plain DeferredToolResults
	p := plain(r)
	(*DeferredToolResults)(&p).ensure()
	return json.Marshal(p)
}

// UnmarshalJSON accepts any subset of the four keys and allocates the rest.
func (r *DeferredToolResults) UnmarshalJSON(b []byte) error {
	type plain DeferredToolResults
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = DeferredToolResults(p)
	r.ensure()
	return nil
}

func (r *DeferredToolResults) ensure() {
	if r.Approvals == nil {
		r.Approvals = map[string]ApprovalResult{}
	}
	if r.Calls == nil {
		r.Calls = map[string]CallResult{}
	}
	if r.Metadata == nil {
		r.Metadata = map[string]map[string]any{}
	}
	if r.AnsweredBy == nil {
		r.AnsweredBy = map[string]string{}
	}
}

// Merge copies every answer of o into r; o wins where both answer a call.
func (r *DeferredToolResults) Merge(o *DeferredToolResults) {
	if o == nil {
		return
	}
	r.ensure()
	maps.Copy(r.Approvals, o.Approvals)
	maps.Copy(r.Calls, o.Calls)
	maps.Copy(r.Metadata, o.Metadata)
	maps.Copy(r.AnsweredBy, o.AnsweredBy)
}

// Len returns how many calls r answers.
func (r *DeferredToolResults) Len() int {
	if r == nil {
		return 0
	}
	return len(r.Approvals) + len(r.Calls)
}

// The kind tags of the object forms in the wire format.
const (
	kindToolApproved = "tool-approved"
	kindToolDenied   = "tool-denied"
	kindToolFailed   = "tool-failed"
	kindModelRetry   = "model-retry"
)

// ApprovalResult is a decision on an approval: approved, possibly with
// arguments to run instead, or denied with a message for the model.
// On the wire it is true, false, {"kind":"tool-approved","override_args":{…}}
// or {"kind":"tool-denied","message":"…"}.
type ApprovalResult struct {
	Approved bool
	// OverrideArgs, when set on an approval, replaces the call's arguments.
	OverrideArgs json.RawMessage
	// Message tells the model why the call was denied.
	Message string
}

// Approve returns an approval that runs the call as the model made it.
func Approve() ApprovalResult { return ApprovalResult{Approved: true} }

// ApproveWith returns an approval that runs the call with args instead.
func ApproveWith(args json.RawMessage) ApprovalResult {
	return ApprovalResult{Approved: true, OverrideArgs: args}
}

// Deny returns a denial; an empty message means DefaultDenialMessage.
func Deny(message string) ApprovalResult {
	if message == "" {
		message = DefaultDenialMessage
	}
	return ApprovalResult{Message: message}
}

// DenialMessage returns the message the model sees for a denial.
func (a ApprovalResult) DenialMessage() string {
	if a.Message == "" {
		return DefaultDenialMessage
	}
	return a.Message
}

// tagged is the object form of a denial, failure or retry; the kind comes
// last, as Pydantic AI writes it.
type tagged struct {
	Message string `json:"message"`
	Kind    string `json:"kind"`
}

// MarshalJSON writes true for a plain approval and the tagged object otherwise.
func (a ApprovalResult) MarshalJSON() ([]byte, error) {
	switch {
	case a.Approved && len(a.OverrideArgs) == 0:
		return []byte("true"), nil
	case a.Approved:
		return json.Marshal(struct {
			OverrideArgs json.RawMessage `json:"override_args"`
			Kind         string          `json:"kind"`
		}{a.OverrideArgs, kindToolApproved})
	default:
		return json.Marshal(tagged{a.DenialMessage(), kindToolDenied})
	}
}

// UnmarshalJSON accepts every wire form of an approval decision.
func (a *ApprovalResult) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch string(b) {
	case "true":
		*a = Approve()
		return nil
	case "false":
		*a = Deny("")
		return nil
	}
	var obj struct {
		Kind         string          `json:"kind"`
		OverrideArgs json.RawMessage `json:"override_args"`
		Message      *string         `json:"message"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return fmt.Errorf("approval: want true, false or an object with kind tool-approved or tool-denied: %w", err)
	}
	switch obj.Kind {
	case kindToolApproved:
		args := bytes.TrimSpace(obj.OverrideArgs)
		if len(args) == 0 || string(args) == "null" {
			*a = Approve()
			return nil
		}
		norm, err := normalizeArgs(args)
		if err != nil {
			return fmt.Errorf("approval: override_args: %w", err)
		}
		*a = ApproveWith(norm)
	case kindToolDenied:
		msg := ""
		if obj.Message != nil {
			msg = *obj.Message
		}
		*a = Deny(msg)
	default:
		return fmt.Errorf("approval: unknown kind %q (want %q or %q)", obj.Kind, kindToolApproved, kindToolDenied)
	}
	return nil
}

// CallResult is the outcome of a deferred call: a value (any JSON), a
// failure, or a request that the model retry with a message.
// On the wire it is any JSON value, {"kind":"tool-failed","message":"…"}
// or {"kind":"model-retry","message":"…"}.
type CallResult struct {
	// Value is the call's result as JSON; set when neither Failed nor Retry.
	Value json.RawMessage
	// Failed marks the call as failed with Message.
	Failed bool
	// Retry asks the model to try again, telling it Message.
	Retry bool
	// Message explains a failure or a retry.
	Message string
}

// Return returns a result that holds v encoded as JSON.
func Return(v any) (CallResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return CallResult{}, fmt.Errorf("call result: %w", err)
	}
	return CallResult{Value: b}, nil
}

// Fail returns a failed call result.
func Fail(message string) CallResult { return CallResult{Failed: true, Message: message} }

// RetryWith returns a result that asks the model to retry.
func RetryWith(message string) CallResult { return CallResult{Retry: true, Message: message} }

// MarshalJSON writes the value, or the tagged object for failures and retries.
func (c CallResult) MarshalJSON() ([]byte, error) {
	switch {
	case c.Failed:
		return json.Marshal(tagged{c.Message, kindToolFailed})
	case c.Retry:
		return json.Marshal(tagged{c.Message, kindModelRetry})
	case len(c.Value) == 0:
		return []byte("null"), nil
	default:
		return c.Value, nil
	}
}

// UnmarshalJSON reads an object whose kind is tool-failed or model-retry as
// that outcome, and keeps any other JSON as the value.
func (c *CallResult) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return errors.New("call result: invalid JSON")
	}
	if len(b) > 0 && b[0] == '{' {
		var obj struct {
			Kind    string          `json:"kind"`
			Message json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal(b, &obj); err == nil && (obj.Kind == kindToolFailed || obj.Kind == kindModelRetry) {
			var msg string
			if len(obj.Message) > 0 && string(obj.Message) != "null" {
				if err := json.Unmarshal(obj.Message, &msg); err != nil {
					return fmt.Errorf("call result: %s: message: want a string: %w", obj.Kind, err)
				}
			}
			if obj.Kind == kindToolFailed {
				*c = Fail(msg)
			} else {
				*c = RetryWith(msg)
			}
			return nil
		}
	}
	*c = CallResult{Value: bytes.Clone(b)}
	return nil
}

// PendingToolCall is a view of one pending call for user interfaces: the
// call, what it waits for, and the confirmation text to show a person.
type PendingToolCall struct {
	Call     ToolCallPart   `json:"call"`
	Kind     CallKind       `json:"kind"`
	Message  string         `json:"message"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// DefaultConfirmation is the confirmation text for a call when its tool
// supplies none, e.g. `Run delete_file({"path":"temp.txt"})?`.
func DefaultConfirmation(call ToolCallPart) string {
	args, err := call.ArgsObject()
	if err != nil {
		args = call.Args
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		buf.Reset()
		buf.Write(args)
	}
	return fmt.Sprintf("Run %s(%s)?", call.ToolName, buf.String())
}
