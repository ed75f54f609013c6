package routing

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	"github.com/goccy/go-yaml/ast"

	"github.com/slackapprove/slackbot/agentrunner"
)

// Step-up methods a route may accept (step_up_methods).
const (
	// StepUpWebAuthn is a passkey: a WebAuthn assertion with user
	// verification, from a credential registered to the approver.
	StepUpWebAuthn = "webauthn"
	// StepUpTOTP is a one-time code from an authenticator app (RFC 6238):
	// weaker than a passkey (it can be phished), so a route allows it only
	// when it says so.
	StepUpTOTP = "totp"
)

// stepUpMethods are the values step_up_methods may list, strongest first.
var stepUpMethods = []string{StepUpWebAuthn, StepUpTOTP}

// StepUp says when a person's approval of a route's call needs a step-up
// proof first (a passkey, or a one-time code where the route allows it),
// beyond the click in Slack: never (the zero value), always, or when a CEL
// condition on the arguments that would run holds.
type StepUp struct {
	// Always: step_up: true.
	Always bool
	// When is the CEL condition (step_up: "args.amount > 10000"), over
	// args alone, compiled by ParseRoutes; empty with Always or none.
	When string

	when cel.Program
}

// On reports whether the route asks for step-up at all.
func (s StepUp) On() bool { return s.Always || s.When != "" }

// NeedsStepUp reports whether a person's approval of a call of r with the
// arguments args (the ones that would run: an approver's edit, else the
// call's own) needs a step-up proof. A condition that cannot be evaluated
// (a missing argument, a type mismatch, the cost limit, arguments that are
// not an object) needs one: an error here must never let an approval
// through on a click alone, so the error comes with true.
func (r *Route) NeedsStepUp(args json.RawMessage) (bool, error) {
	if r == nil || !r.StepUp.On() {
		return false, nil
	}
	if r.StepUp.Always {
		return true, nil
	}
	if r.StepUp.when == nil {
		// Built by hand with a condition never compiled: fail closed.
		return true, fmt.Errorf("route %s: step_up %q was not compiled", r.Name, r.StepUp.When)
	}
	m, err := ArgsForPolicy(agentrunner.ToolCallPart{Args: args})
	if err != nil {
		return true, fmt.Errorf("route %s: step_up: %w", r.Name, err)
	}
	need, err := evalBool(context.Background(), r.StepUp.when, map[string]any{"args": celMap(m)})
	if err != nil {
		return true, fmt.Errorf("route %s: step_up %q: %w", r.Name, r.StepUp.When, err)
	}
	return need, nil
}

// AllowsStepUp reports whether method counts as a step-up on r
// (step_up_methods, by default a passkey only).
func (r *Route) AllowsStepUp(method string) bool {
	return slices.Contains(r.stepUpMethods(), method)
}

// stepUpMethods are the methods r accepts: its step_up_methods, else
// webauthn.
func (r *Route) stepUpMethods() []string {
	if len(r.StepUpMethods) == 0 {
		return []string{StepUpWebAuthn}
	}
	return r.StepUpMethods
}

// StepUpMethodsOrDefault is StepUpMethods, or the default ["webauthn"]
// when the route names none: what a step-up link offers.
func (r *Route) StepUpMethodsOrDefault() []string { return slices.Clone(r.stepUpMethods()) }

// stepUpEnv declares what a step_up condition sees: the arguments alone.
// It is judged again on an edit's arguments when a person approves, where
// nothing else of the call is at hand, so it may name nothing else.
func stepUpEnv() (*cel.Env, error) {
	return cel.NewEnv(cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)))
}

// stepUpField decodes step_up (true, false, or a CEL condition on args)
// and step_up_methods into r, and reports whether fl was one of them.
func (d *routesDecoder) stepUpField(r *Route, fl field, at *routeNodes) bool {
	switch fl.key {
	case "step_up":
		n := d.resolve(fl.value)
		switch v := n.(type) {
		case *ast.BoolNode:
			r.StepUp = StepUp{Always: v.Value}
		case *ast.StringNode, *ast.LiteralNode:
			expr := scalarText(n)
			if strings.TrimSpace(expr) == "" {
				d.problemAt(n, "step_up: want true, false or a condition on args (like \"args.amount > 10000\"), got empty text")
				return true
			}
			r.StepUp = StepUp{When: expr}
			at.stepUp = fl
		case *ast.NullNode:
		default:
			d.problemAt(n, "step_up: want true, false or a condition on args (like \"args.amount > 10000\"), got %s", describeNode(n))
		}
	case "step_up_methods":
		at.stepUpMethods = fl.value
		methods, ok := d.strings(fl)
		if !ok {
			return true
		}
		for i, m := range methods {
			if !slices.Contains(stepUpMethods, m) {
				d.problemAt(d.itemNode(fl.value, i), "step_up_methods: %q is not a step-up method: use %s", m, strings.Join(stepUpMethods, " or "))
				continue
			}
			if slices.Contains(r.StepUpMethods, m) {
				d.problemAt(d.itemNode(fl.value, i), "step_up_methods: %q is listed twice", m)
				continue
			}
			r.StepUpMethods = append(r.StepUpMethods, m)
		}
		if len(methods) == 0 {
			d.problemAt(fl.value, "step_up_methods: list at least one of %s, or leave it out (a passkey)", strings.Join(stepUpMethods, ", "))
		}
	default:
		return false
	}
	return true
}

// checkStepUp reports step_up_methods on a route that asks for no
// step-up (it would never apply), and compiles a step_up condition.
func (d *routesDecoder) checkStepUp(r *Route, at routeNodes) {
	if at.stepUpMethods != nil && !r.StepUp.On() {
		d.problemAt(at.stepUpMethods, "step_up_methods would never apply: route %q has no step_up", r.Name)
	}
	if r.OfferAlwaysAllow && r.StepUp.On() {
		// An agent's always-allow rule lets every later call it covers run
		// without asking slackbot again: one step-up would stand for calls
		// nobody proved anything for.
		d.problemAt(at.alwaysAllow, "offer_always_allow cannot go with step_up: route %q asks for a proof on each approval, and an always-allow rule lets later calls run with none", r.Name)
	}
	if at.stepUp.value == nil || r.StepUp.When == "" {
		return
	}
	env, err := stepUpEnv()
	if err != nil {
		d.problemAt(at.stepUp.value, "step_up: %v", err)
		return
	}
	r.StepUp.when = d.compile(env, at.stepUp, r.StepUp.When)
}

// stepUpText says, for routes check, when a route asks for step-up and
// with which methods; "" when it never does.
func (r *Route) stepUpText() string {
	if !r.StepUp.On() {
		return ""
	}
	when := "always"
	if !r.StepUp.Always {
		when = "when " + OneLine(r.StepUp.When)
	}
	return fmt.Sprintf("step-up %s (%s)", when, strings.Join(r.stepUpMethods(), ", "))
}
