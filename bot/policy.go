package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/goccy/go-yaml/ast"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// AnsweredBy values recorded for decisions made by routing rather than by a
// person: AnsweredByPolicyPrefix + route name for a route's policy, and
// AnsweredByNoRoute when no route matched.
const (
	AnsweredByPolicyPrefix = "policy:"
	AnsweredByNoRoute      = AnsweredByPolicyPrefix + noRouteName
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
				"%s does not compile: %s (column %d of %q)", fl.key, e.Message, e.Location.Column()+1, squashSpace(expr))
		}
		return nil
	}
	if t := checked.OutputType(); !t.IsExactType(cel.BoolType) {
		hint := ""
		if t.IsExactType(cel.DynType) {
			hint = fmt.Sprintf("; compare it, e.g. (%s) == true", squashSpace(expr))
		}
		d.problemAt(fl.value, "%s must be true or false, but %q is of type %s%s", fl.key, squashSpace(expr), t, hint)
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
	if r.autoDeny == nil && r.autoApprove == nil {
		return Undecided, nil
	}
	vars := in.vars()
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

// Denies runs the route's auto_deny alone: edited arguments must pass it
// (see Bot.CheckEdit), while auto_approve never approves an edit. A route
// without auto_deny denies nothing.
func (r *Route) Denies(ctx context.Context, in PolicyInput) (bool, error) {
	return r.denies(ctx, in.vars())
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

// vars are the CEL variables of a policy evaluation.
func (in PolicyInput) vars() map[string]any {
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

// argsForPolicy decodes a call's arguments keeping numbers exact.
func argsForPolicy(call agentrunner.ToolCallPart) (map[string]any, error) {
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

// Policy is the deferred-call handler that applies the routing file before
// anyone is asked: a call no route matches is denied (or, for a question or
// external call, failed), and a route's auto_deny / auto_approve decide the
// approvals they cover. Everything else is left to the next handler, the
// Slack ask. Decisions are recorded as answered by "policy:<route>", or
// "policy:none" when no route matched.
type Policy struct {
	Routes *Routes
	// Now is the clock policies see as `now`; nil means time.Now.
	Now func() time.Time
	// Log receives evaluation errors; nil means slog.Default().
	Log *slog.Logger
	// Record, when set, is told every decision the policy makes, for the
	// audit stream: decisions without a person are audited too.
	Record func(ctx context.Context, d PolicyDecision)
}

// PolicyDecision is one decision a policy made without a person.
type PolicyDecision struct {
	RunID     string
	Call      agentrunner.ToolCallPart
	Requester string
	By        string // "policy:<route>" or "policy:none"
	Decision  string // "approved", "denied" or "failed"
	Reason    string
}

// HandleDeferred implements agentrunner.DeferredHandler.
func (p *Policy) HandleDeferred(ctx context.Context, rc *agentrunner.RunContext, requests agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
	origin := approval.OriginFrom(rc)
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	res := agentrunner.NewDeferredToolResults()
	for _, call := range requests.Approvals {
		id := call.ToolCallID
		route := p.Routes.Match(call.ToolName, origin.Channel)
		if route == nil {
			res.Approvals[id] = agentrunner.Deny(NoRouteMessage(call.ToolName, origin))
			res.AnsweredBy[id] = AnsweredByNoRoute
			continue
		}
		verdict, err := p.evaluate(ctx, route, call, origin, requests.Metadata[id], now())
		if err != nil {
			p.logger().WarnContext(ctx, "policy could not decide; asking a person",
				"run_id", runID(rc), "tool_call_id", id, "tool", call.ToolName, "route", route.Name, "error", err)
			continue
		}
		switch verdict {
		case AutoDenied:
			res.Approvals[id] = agentrunner.Deny(fmt.Sprintf(
				"The %q route's policy denied this call (auto_deny: %s).", route.Name, squashSpace(route.AutoDeny)))
			res.AnsweredBy[id] = AnsweredByPolicyPrefix + route.Name
		case AutoApproved:
			res.Approvals[id] = agentrunner.Approve()
			res.AnsweredBy[id] = AnsweredByPolicyPrefix + route.Name
		}
	}
	for _, call := range requests.Calls {
		if p.Routes.Match(call.ToolName, origin.Channel) == nil {
			res.Calls[call.ToolCallID] = agentrunner.Fail(NoRouteMessage(call.ToolName, origin))
			res.AnsweredBy[call.ToolCallID] = AnsweredByNoRoute
		}
	}
	if p.Record != nil {
		p.record(ctx, rc, origin, requests, res)
	}
	return res, nil
}

func (p *Policy) record(ctx context.Context, rc *agentrunner.RunContext, origin *approval.Origin, requests agentrunner.DeferredToolRequests, res *agentrunner.DeferredToolResults) {
	for _, id := range requests.IDs() {
		by, ok := res.AnsweredBy[id]
		if !ok {
			continue
		}
		call, _ := requests.Call(id)
		d := PolicyDecision{RunID: runID(rc), Call: call, Requester: origin.Requester(), By: by}
		if a, ok := res.Approvals[id]; ok {
			d.Decision = "approved"
			if !a.Approved {
				d.Decision, d.Reason = "denied", a.DenialMessage()
			}
		} else if c, ok := res.Calls[id]; ok {
			d.Decision, d.Reason = "failed", c.Message
		}
		p.Record(ctx, d)
	}
}

func (p *Policy) evaluate(ctx context.Context, route *Route, call agentrunner.ToolCallPart, origin *approval.Origin, md map[string]any, now time.Time) (Verdict, error) {
	if route.autoDeny == nil && route.autoApprove == nil {
		return Undecided, nil
	}
	args, err := argsForPolicy(call)
	if err != nil {
		return Undecided, fmt.Errorf("route %s: %w", route.Name, err)
	}
	return route.Evaluate(ctx, PolicyInput{
		Tool:      call.ToolName,
		Args:      args,
		Requester: origin.Requester(),
		Channel:   origin.Channel,
		Metadata:  md,
		Now:       now,
	})
}

func (p *Policy) logger() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.Default()
}

func runID(rc *agentrunner.RunContext) string {
	if rc == nil {
		return ""
	}
	return rc.RunID
}

// NoRouteMessage is what the model is told when no route matches a call.
func NoRouteMessage(tool string, origin *approval.Origin) string {
	return fmt.Sprintf("No approval route matches %s from %s; the call was denied. Ask an admin to add a route.",
		tool, describeOrigin(origin))
}

func describeOrigin(o *approval.Origin) string {
	switch {
	case o == nil:
		return "an unknown origin"
	case o.Channel != "":
		return o.Channel
	case o.Client != "":
		return "API client " + o.Client
	}
	return "outside Slack"
}
