package approval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/routing"
)

// editable reports whether a person may approve call c of r with edited
// arguments: slackbot knows the tool's schema, or the API client sent it
// (ArgsSchemaKey), so the approver sees its problems before the call runs;
// or the call is a coding agent's permission prompt, whose input (Bash's
// command) is the agent's to check, as when a person edits it in the
// agent's own prompt. A Service that knows no tools (Config.Tools nil)
// leaves every call to CheckEdit alone.
func (s *Service) editable(r *Request, c *Call) bool {
	if s.tools == nil {
		return true
	}
	agent, _ := r.Requests.Metadata[c.ID][MetaPermissionPrompt].(string)
	return Editable(s.tools, r, c.ID) || agent != "" || agentEditable(r, c.ID)
}

// CheckEdit checks edited arguments before call c of r may run with them,
// for every door an edit comes through (the Slack edit form, override_args
// of the HTTP API): they must be a JSON object nested no deeper than
// agentrunner.MaxArgsDepth that reads one way (agentrunner.CheckArgs: no
// member named twice, Unicode text, exact numbers), fit the tool's schema when the tool is known
// (or the schema the API client sent for the call, ArgsSchemaKey), and pass the route's auto_deny exactly as the original arguments had to.
// It returns the arguments to record (as the schema normalized them), or
// an *Error: EINVALID for arguments that are not an object or not the
// schema's, EPOLICY when the route's policy denies them or cannot check
// them, with the reason as its Message.
//
// auto_approve is never evaluated: an edit is approved by whoever made it,
// with the route's usual approvers and quorum, never by a policy. An
// auto_deny that cannot be evaluated on the edited arguments refuses them,
// as a policy that cannot decide never lets a call through.
func (s *Service) CheckEdit(ctx context.Context, r *Request, c *Call, edited json.RawMessage) (json.RawMessage, error) {
	args := json.RawMessage(bytes.TrimSpace(edited))
	switch {
	case !json.Valid(args):
		return nil, Errorf(EINVALID, "This is not valid JSON.")
	case len(args) == 0 || args[0] != '{':
		return nil, Errorf(EINVALID, "The arguments must be a JSON object.")
	}
	if err := agentrunner.CheckArgs(args); errors.Is(err, agentrunner.ErrArgsTooDeep) {
		return nil, Errorf(EINVALID, "The arguments are nested deeper than %d levels of objects and arrays.", agentrunner.MaxArgsDepth)
	} else if err != nil {
		return nil, Errorf(EINVALID, "These arguments could be read two ways: %s.", truncate(err.Error(), 1900))
	}
	call, _ := r.Requests.Call(c.ID)
	tool, err := s.argsTool(r, c.ID, call.ToolName)
	if err != nil {
		return nil, err
	}
	if tool != nil {
		valid, err := tool.ValidateArgs(args)
		if err != nil {
			var ae *agentrunner.ArgsError
			if errors.As(err, &ae) {
				return nil, Errorf(EINVALID, "%s", truncate(strings.Join(ae.Problems, "; "), 1900))
			}
			return nil, Errorf(EINVALID, "%s", truncate(err.Error(), 1900))
		}
		args = valid
	}
	route := s.Route(c.Route)
	if route == nil {
		return nil, Errorf(EPOLICY, "The call's route %q is no longer in the routing file, so its policy cannot check the edit.", c.Route)
	}
	call.Args = args
	parsed, err := routing.ArgsForPolicy(call)
	if err != nil {
		return nil, Errorf(EINVALID, "The arguments must be a JSON object.")
	}
	deny, err := route.Denies(ctx, routing.PolicyInput{
		Tool: call.ToolName, Args: parsed, Requester: r.Origin.Requester(), Channel: r.Origin.Channel,
		Metadata: r.Requests.Metadata[c.ID], Now: s.now(),
	})
	switch {
	case err != nil:
		return nil, Errorf(EPOLICY, "The %q route's policy could not check these arguments, so they are refused: %s", route.Name, truncate(err.Error(), 1500))
	case deny:
		return nil, Errorf(EPOLICY, "The %q route's policy denies these arguments (auto_deny: %s).", route.Name, truncate(routing.OneLine(route.AutoDeny), 1500))
	}
	return args, nil
}

// argsTool returns what checks the arguments of call id of r: the tool
// if slackbot knows it, else a coding agent's own tool's built-in schema
// (AgentSchema, which the client cannot replace), else the schema the
// request carries for the call (ArgsSchemaKey), else nil.
func (s *Service) argsTool(r *Request, id, name string) (*agentrunner.Tool, error) {
	if s.tools != nil {
		if tool, ok := s.tools.Tool(name); ok {
			return tool, nil
		}
	}
	if tool := AgentSchema(CallAgent(r, id), name); tool != nil {
		return tool, nil
	}
	tool, _, err := argsSchemaTool(name, r.Requests.Metadata[id])
	return tool, err
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
