package routing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/goccy/go-yaml/ast"

	"github.com/slackapprove/slackbot/agentrunner"
)

// policyCostLimit bounds the work of one policy evaluation (CEL cost units,
// roughly one per operation), so a policy over large arguments cannot stall
// a run. Ordinary policies cost well under 100.
const policyCostLimit = 100_000

// policyEnv declares the variables a policy sees.
func policyEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("tool", cel.StringType),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("requester", cel.StringType),
		cel.Variable("channel", cel.StringType),
		cel.Variable("metadata", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("now", cel.TimestampType),
	)
}

// compile checks a policy expression and reports problems at the lines of
// the YAML value that holds it.
func (d *routesDecoder) compile(env *cel.Env, fl field, expr string) cel.Program {
	checked, iss := env.Compile(expr)
	if iss.Err() != nil {
		for _, e := range iss.Errors() {
			d.problemLine(exprLine(fl.value, e.Location.Line()),
				"%s does not compile: %s (column %d of %q)", fl.key, e.Message, e.Location.Column()+1, OneLine(expr))
		}
		return nil
	}
	if t := checked.OutputType(); !t.IsExactType(cel.BoolType) {
		hint := ""
		if t.IsExactType(cel.DynType) {
			hint = fmt.Sprintf("; compare it, e.g. (%s) == true", OneLine(expr))
		}
		d.problemAt(fl.value, "%s must be true or false, but %q is of type %s%s", fl.key, OneLine(expr), t, hint)
		return nil
	}
	prg, err := env.Program(checked, cel.CostLimit(policyCostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		d.problemAt(fl.value, "%s: %v", fl.key, err)
		return nil
	}
	return prg
}

// exprLine maps a line of an expression to the line of the file: a block
// scalar (| or >) starts on the line after its indicator.
func exprLine(value ast.Node, exprLine int) int {
	line := lineOf(value)
	if _, block := value.(*ast.LiteralNode); block {
		return line + exprLine
	}
	return line + exprLine - 1
}

// PolicyInput is what a route's policies see, as CEL variables of the same
// names: tool (string), args and metadata (maps), requester and channel
// (strings) and now (timestamp).
type PolicyInput struct {
	Tool string
	// Args are the call's arguments; JSON numbers that are whole become
	// CEL ints, others doubles, so `args.amount <= 100` and
	// `args.count == 3` both read naturally.
	Args      map[string]any
	Requester string
	Channel   string
	Metadata  map[string]any
	Now       time.Time
}

// Verdict is what a route's policies decided about a call.
type Verdict int

// Verdicts.
const (
	// Undecided leaves the call to a person.
	Undecided Verdict = iota
	// AutoApproved: auto_approve was true (and auto_deny was not).
	AutoApproved
	// AutoDenied: auto_deny was true.
	AutoDenied
)

// String returns "undecided", "auto_approve" or "auto_deny".
func (v Verdict) String() string {
	switch v {
	case AutoApproved:
		return "auto_approve"
	case AutoDenied:
		return "auto_deny"
	}
	return "undecided"
}

// Evaluate runs the route's policies: auto_deny first, then auto_approve.
// An evaluation error (a missing argument, a type mismatch, the cost limit)
// returns Undecided with the error: a policy that cannot be evaluated
// never approves, and an auto_deny that fails keeps auto_approve from
// running.
func (r *Route) Evaluate(ctx context.Context, in PolicyInput) (Verdict, error) {
	if !r.HasPolicy() {
		return Undecided, nil
	}
	vars := in.Vars()
	deny, err := r.denies(ctx, vars)
	if err != nil {
		return Undecided, err
	}
	if deny {
		return AutoDenied, nil
	}
	if r.autoApprove != nil {
		approve, err := evalBool(ctx, r.autoApprove, vars)
		if err != nil {
			return Undecided, fmt.Errorf("route %s: auto_approve %q: %w", r.Name, r.AutoApprove, err)
		}
		if approve {
			return AutoApproved, nil
		}
	}
	return Undecided, nil
}

// HasPolicy reports whether the route has a compiled auto_approve or
// auto_deny, so that callers can skip decoding a call's arguments for a
// route that decides nothing by policy.
func (r *Route) HasPolicy() bool {
	return r.autoDeny != nil || r.autoApprove != nil
}

// Denies runs the route's auto_deny alone: edited arguments must pass it
// (see bot.Bot.CheckEdit), while auto_approve never approves an edit. A route
// without auto_deny denies nothing.
func (r *Route) Denies(ctx context.Context, in PolicyInput) (bool, error) {
	return r.denies(ctx, in.Vars())
}

func (r *Route) denies(ctx context.Context, vars map[string]any) (bool, error) {
	if r.autoDeny == nil {
		return false, nil
	}
	deny, err := evalBool(ctx, r.autoDeny, vars)
	if err != nil {
		return false, fmt.Errorf("route %s: auto_deny %q: %w", r.Name, r.AutoDeny, err)
	}
	return deny, nil
}

// Vars returns the CEL variables a policy evaluation sees, as CEL reads
// them: args and metadata with JSON numbers as ints or doubles.
func (in PolicyInput) Vars() map[string]any {
	return map[string]any{
		"tool":      in.Tool,
		"args":      celMap(in.Args),
		"requester": in.Requester,
		"channel":   in.Channel,
		"metadata":  celMap(in.Metadata),
		"now":       in.Now,
	}
}

func evalBool(ctx context.Context, prg cel.Program, vars map[string]any) (bool, error) {
	out, _, err := prg.ContextEval(ctx, vars)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("result %v is not a boolean", out)
	}
	return bool(b), nil
}

// celMap returns m with JSON numbers as CEL ints or doubles, never nil.
func celMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = celValue(v)
	}
	return out
}

func celValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		return celMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = celValue(e)
		}
		return out
	}
	return v
}

// ArgsForPolicy decodes a call's arguments for PolicyInput.Args, keeping
// numbers exact (as json.Number).
func ArgsForPolicy(call agentrunner.ToolCallPart) (map[string]any, error) {
	raw, err := call.ArgsObject()
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	m := map[string]any{}
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("args: %w", err)
	}
	return m, nil
}
