package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/slackapprove/slackbot/agentrunner"
)

// ErrEditRefused is wrapped by every *EditRefusedError.
var ErrEditRefused = errors.New("edited arguments refused")

// EditRefusedError says why edited arguments may not replace a call's
// own: not a JSON object, not the tool's schema, or denied by the route's
// auto_deny. Reason is written for the person or client who edited.
type EditRefusedError struct {
	Reason string
}

// Error returns the reason.
func (e *EditRefusedError) Error() string { return "edited arguments refused: " + e.Reason }

// Unwrap lets callers test for ErrEditRefused.
func (e *EditRefusedError) Unwrap() error { return ErrEditRefused }

func refuseEdit(format string, args ...any) error {
	return &EditRefusedError{Reason: fmt.Sprintf(format, args...)}
}

// EditedCall is a call whose arguments someone edited before approving it.
type EditedCall struct {
	// Call is the call as it was asked: its tool and original arguments.
	Call agentrunner.ToolCallPart
	// Route is the route the call went to (CallStatus.Route).
	Route string
	// Requester, Channel and Metadata are what the route's policies saw
	// when the call was asked: the requester as policies name it (a Slack
	// user id, "api:<authenticated client>"), the channel the run was
	// started from, the call's metadata.
	Requester string
	Channel   string
	Metadata  map[string]any
	// Args are the edited arguments.
	Args json.RawMessage
}

// CheckEdit checks edited arguments before a call may run with them, for
// every door an edit comes through (the Slack edit modal, override_args
// of the HTTP API): they must be a JSON object nested no deeper than
// agentrunner.MaxArgsDepth (as a call's own arguments), fit the tool's schema when
// slackbot knows the tool, and pass the route's auto_deny exactly as the
// original arguments had to. It returns the arguments to record (as the
// schema normalized them), or an error wrapping ErrEditRefused (an
// *EditRefusedError with the reason) and nothing is to be recorded.
//
// auto_approve is never evaluated: an edit is approved by whoever made
// it, with the route's usual approvers and quorum, never by a policy. An
// auto_deny that cannot be evaluated on the edited arguments refuses
// them, as a policy that cannot decide never lets a call through.
func (b *Bot) CheckEdit(ctx context.Context, e EditedCall) (json.RawMessage, error) {
	args := json.RawMessage(bytes.TrimSpace(e.Args))
	if !json.Valid(args) {
		return nil, refuseEdit("This is not valid JSON.")
	}
	if len(args) == 0 || args[0] != '{' {
		return nil, refuseEdit("The arguments must be a JSON object.")
	}
	if err := agentrunner.CheckArgsDepth(args); err != nil {
		return nil, refuseEdit("The arguments are nested deeper than %d levels of objects and arrays.", agentrunner.MaxArgsDepth)
	}
	if b.runner != nil {
		if tool, ok := b.runner.Tool(e.Call.ToolName); ok {
			valid, err := tool.ValidateArgs(args)
			if err != nil {
				var ae *agentrunner.ArgsError
				if errors.As(err, &ae) {
					return nil, refuseEdit("%s", truncate(strings.Join(ae.Problems, "; "), 1900))
				}
				return nil, refuseEdit("%s", truncate(err.Error(), 1900))
			}
			args = valid
		}
	}
	route := b.route(e.Route)
	if route == nil {
		return nil, refuseEdit("The call's route %q is no longer in the routing file, so its policy cannot check the edit.", e.Route)
	}
	edited := e.Call
	edited.Args = args
	parsed, err := argsForPolicy(edited)
	if err != nil {
		return nil, refuseEdit("The arguments must be a JSON object.")
	}
	deny, err := route.Denies(ctx, PolicyInput{
		Tool: e.Call.ToolName, Args: parsed, Requester: e.Requester, Channel: e.Channel,
		Metadata: e.Metadata, Now: b.now(),
	})
	switch {
	case err != nil:
		return nil, refuseEdit("The %q route's policy could not check these arguments, so they are refused: %s", route.Name, truncate(err.Error(), 1500))
	case deny:
		return nil, refuseEdit("The %q route's policy denies these arguments (auto_deny: %s).", route.Name, truncate(squashSpace(route.AutoDeny), 1500))
	}
	return args, nil
}

// validateEdit checks arguments edited in the Slack modal; the problem is
// shown under the input. Only tools slackbot knows can be edited there
// (the card shows the Edit button for them only): an approver must see
// the schema's problems before the call runs.
func (b *Bot) validateEdit(ctx context.Context, t *clickTarget, text string) (json.RawMessage, string) {
	call, _ := t.approval.Requests.Call(t.call.ID)
	if b.runner != nil {
		if _, ok := b.runner.Tool(call.ToolName); !ok {
			return nil, "slackbot does not know this tool's arguments, so they cannot be edited here."
		}
	}
	// Policies judge the authenticated API client ("api:<client>"), never
	// the name it gave.
	requester := t.approval.Origin.Requester()
	args, err := b.CheckEdit(ctx, EditedCall{
		Call: call, Route: t.call.Route, Requester: requester, Channel: t.approval.Origin.Channel,
		Metadata: t.approval.Requests.Metadata[t.call.ID], Args: json.RawMessage(text),
	})
	var refused *EditRefusedError
	if errors.As(err, &refused) {
		return nil, refused.Reason
	}
	if err != nil {
		return nil, "slackbot could not check these arguments. Try again."
	}
	return args, ""
}
