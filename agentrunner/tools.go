package agentrunner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
)

// ToolContext is what a tool knows about the call it is running.
type ToolContext struct {
	RunID      string
	ToolName   string
	ToolCallID string
	// Approved is true when a person or policy approved this call; a tool
	// that asks for approval by argument checks it on the second pass.
	Approved bool
	// Metadata is the metadata the answer attached to this call.
	Metadata map[string]any
	// Retry counts the retries of this tool so far in the run.
	Retry int
	// Deps is whatever the caller passed in RunInput.Deps.
	Deps any
}

// ToolFunc is the typed body of a tool: args is decoded from the call's
// validated arguments.
type ToolFunc[A any] func(ctx context.Context, tc *ToolContext, args A) (any, error)

// RawToolFunc is the body of a tool whose arguments stay JSON, such as a
// tool proxied from an MCP server.
type RawToolFunc func(ctx context.Context, tc *ToolContext, args json.RawMessage) (any, error)

// Tool is a function the model may call. Build one with NewTool or
// NewRawTool.
type Tool struct {
	name        string
	description string
	schema      json.RawMessage
	compiled    *validator.Schema
	fn          RawToolFunc

	requiresApproval bool
	readOnly         bool
	confirm          func(call ToolCallPart) string
}

// ToolOption configures a Tool.
type ToolOption func(*Tool)

// RequiresApproval makes every call of the tool wait for a decision.
func RequiresApproval() ToolOption { return func(t *Tool) { t.requiresApproval = true } }

// ReadOnly marks a tool that changes nothing, which policies may approve
// without asking anyone.
func ReadOnly() ToolOption { return func(t *Tool) { t.readOnly = true } }

// Confirmation sets how the tool asks a person to confirm a call; the
// default is DefaultConfirmation.
func Confirmation(f func(call ToolCallPart) string) ToolOption {
	return func(t *Tool) { t.confirm = f }
}

// NewTool returns a tool whose JSON schema is derived from the args struct
// A (field tags as in github.com/invopop/jsonschema: `json`, `jsonschema`).
// It panics if A has no JSON schema, which is a programming error.
func NewTool[A any](name, description string, fn ToolFunc[A], opts ...ToolOption) *Tool {
	r := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	var zero A
	s := r.Reflect(&zero)
	s.Version = ""
	s.ID = ""
	schema, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("agentrunner: tool %s: schema: %v", name, err))
	}
	raw := func(ctx context.Context, tc *ToolContext, args json.RawMessage) (any, error) {
		var a A
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, Retry(fmt.Sprintf("invalid arguments: %v", err))
		}
		return fn(ctx, tc, a)
	}
	t, err := NewRawTool(name, description, schema, raw, opts...)
	if err != nil {
		panic(fmt.Sprintf("agentrunner: %v", err))
	}
	return t
}

// NewRawTool returns a tool with the given JSON schema for its arguments.
func NewRawTool(name, description string, schema json.RawMessage, fn RawToolFunc, opts ...ToolOption) (*Tool, error) {
	if name == "" {
		return nil, errors.New("tool: empty name")
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", name, err)
	}
	c := validator.NewCompiler()
	c.UseLoader(noLoader{})
	url := "mem://tools/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", name, err)
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", name, err)
	}
	t := &Tool{name: name, description: description, schema: schema, compiled: compiled, fn: fn}
	for _, o := range opts {
		o(t)
	}
	return t, nil
}

// noLoader refuses every $ref outside the schema itself (the JSON Schema
// metaschemas are built in): a schema comes from an MCP server or an API
// client, and the validator's default loader would read any local file it
// names (file:///dev/zero never ends).
type noLoader struct{}

// Load refuses url.
func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: a tool's schema may refer only to itself", url)
}

// Name returns the tool's name.
func (t *Tool) Name() string { return t.name }

// Description returns the tool's description.
func (t *Tool) Description() string { return t.description }

// Schema returns the JSON schema of the tool's arguments.
func (t *Tool) Schema() json.RawMessage { return t.schema }

// NeedsApproval reports whether every call of the tool waits for a decision.
func (t *Tool) NeedsApproval() bool { return t.requiresApproval }

// IsReadOnly reports whether the tool was marked ReadOnly.
func (t *Tool) IsReadOnly() bool { return t.readOnly }

// Definition returns what the model is told about the tool.
func (t *Tool) Definition() ToolDefinition {
	return ToolDefinition{Name: t.name, Description: t.description, Parameters: t.schema}
}

// Confirm returns the text a person is asked to confirm for call.
func (t *Tool) Confirm(call ToolCallPart) string {
	if t.confirm != nil {
		return t.confirm(call)
	}
	return DefaultConfirmation(call)
}

// ValidateArgs checks args against the tool's schema and returns them as a
// JSON object. The error lists every problem, for a model or a person.
func (t *Tool) ValidateArgs(args json.RawMessage) (json.RawMessage, error) {
	obj, err := normalizeArgs(args)
	if err != nil {
		return nil, &ArgsError{Tool: t.name, Problems: []string{err.Error()}}
	}
	inst, err := validator.UnmarshalJSON(bytes.NewReader(obj))
	if err != nil {
		return nil, &ArgsError{Tool: t.name, Problems: []string{err.Error()}}
	}
	if err := t.compiled.Validate(inst); err != nil {
		var ve *validator.ValidationError
		if errors.As(err, &ve) {
			return nil, &ArgsError{Tool: t.name, Problems: flattenValidation(ve)}
		}
		return nil, &ArgsError{Tool: t.name, Problems: []string{err.Error()}}
	}
	return obj, nil
}

// ArgsError lists why arguments do not fit a tool's schema.
type ArgsError struct {
	Tool     string
	Problems []string // "at /amount: got string, want number", ...
}

// Error lists the problems, as the model sees them in its retry prompt.
func (e *ArgsError) Error() string {
	return fmt.Sprintf("invalid arguments for %s: %s", e.Tool, strings.Join(e.Problems, "; "))
}

func flattenValidation(ve *validator.ValidationError) []string {
	out := ve.BasicOutput()
	var problems []string
	for _, u := range out.Errors {
		if u.Error == nil {
			continue
		}
		msg := u.Error.String()
		if strings.HasPrefix(msg, "validation failed") {
			continue
		}
		loc := u.InstanceLocation
		if loc == "" {
			loc = "/"
		}
		problems = append(problems, fmt.Sprintf("at %s: %s", loc, msg))
	}
	if len(problems) == 0 {
		problems = append(problems, ve.Error())
	}
	return problems
}

// ToolDefinition is what a model is told about a tool.
type ToolDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ApprovalRequiredError is returned by a tool that needs a decision for this
// call (e.g. a refund above a limit). The run defers the call as an approval
// and runs the tool again, with ToolContext.Approved set, once approved.
type ApprovalRequiredError struct {
	Metadata map[string]any
}

// Error implements error.
func (e *ApprovalRequiredError) Error() string { return "tool call requires approval" }

// RequireApproval returns an ApprovalRequiredError carrying metadata.
func RequireApproval(metadata map[string]any) error {
	return &ApprovalRequiredError{Metadata: metadata}
}

// CallDeferredError is returned by a tool whose result comes from outside
// the run (a worker, a person's answer). The call is deferred as a call.
type CallDeferredError struct {
	Metadata map[string]any
}

// Error implements error.
func (e *CallDeferredError) Error() string { return "tool call deferred" }

// DeferCall returns a CallDeferredError carrying metadata.
func DeferCall(metadata map[string]any) error {
	return &CallDeferredError{Metadata: metadata}
}

// Question returns a CallDeferredError that asks a person question; the
// answer becomes the tool's result.
func Question(question string) error {
	return &CallDeferredError{Metadata: map[string]any{MetadataQuestion: question}}
}

// RetryError is returned by a tool that wants the model to try again; its
// message is sent to the model as a retry prompt.
type RetryError struct {
	Message string
}

// Error returns the message for the model.
func (e *RetryError) Error() string { return e.Message }

// Retry returns a RetryError with message.
func Retry(message string) error { return &RetryError{Message: message} }
