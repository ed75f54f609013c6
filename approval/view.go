package approval

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/routing"
)

// The view of a request: what a person must see of one call to decide it,
// which choices they have, and (words.go) in which words — built here,
// once, for every surface. A surface (Slack's cards and App Home, a web
// page) only lays a CallView out in its own syntax and within its own
// limits; it decides nothing about what is shown.

// CallView is everything a person is shown of one call: the tool and its
// arguments, who asked and from where, why it waits, its deadline and
// quorum, where it stands and who decided, and the tool's outcome. The
// zero Kind and State mean an approval, pending.
type CallView struct {
	// Token is the resume token the run waits on.
	Token string `json:"token"`
	// ToolCallID is the call's tool_call_id.
	ToolCallID string `json:"tool_call_id"`
	// Kind says what the call waits for: a decision, an answer to a
	// question, or an external result.
	Kind agentrunner.CallKind `json:"kind"`
	// ToolName is the tool the model called.
	ToolName string `json:"tool_name"`
	// ToolLabel is how people see the tool: "<server>.<tool>" for an MCP
	// server's tool, whose ToolName is "<server>__<tool>". Empty means
	// ToolName.
	ToolLabel string `json:"tool_label,omitempty"`
	// Args are the call's arguments: a JSON object, or a JSON string holding
	// one, as in Pydantic AI's ToolCallPart.
	Args json.RawMessage `json:"args,omitempty"`
	// Confirmation is the text a person confirms, e.g.
	// `Run delete_file({"path":"temp.txt"})?`, or the question for a
	// question. Empty means agentrunner.DefaultConfirmation (or, for a
	// permission prompt, what the agent's tool will do), made by the
	// surface as long as it can show.
	Confirmation string `json:"confirmation,omitempty"`
	// Requester is who is authenticated as asking: a user id of the chat
	// the run started in when RequesterIsUser, else the name of the API
	// key.
	Requester       string `json:"requester,omitempty"`
	RequesterIsUser bool   `json:"requester_is_user,omitempty"`
	// RequesterClaim is who the API client says it asks for (its
	// "requester": a person, a coding agent's working directory, an MCP
	// client): shown as its claim, beside the key, never as who asked.
	RequesterClaim string `json:"requester_claim,omitempty"`
	// SourceChannel is the channel id where the run was started; empty for
	// runs started through the HTTP API.
	SourceChannel string `json:"source_channel,omitempty"`
	// Context is free text from an API client saying why the call is made.
	Context string `json:"context,omitempty"`
	// Route is the name of the routing rule that sent the call here.
	Route string `json:"route,omitempty"`
	// Mentions are the route's usergroup ids, notified while the call
	// waits.
	Mentions []string `json:"mentions,omitempty"`
	// CreatedAt is when the call was asked; ExpiresAt when it times out.
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// RequiredApprovals is how many distinct approvers must approve; values
	// below 1 mean 1.
	RequiredApprovals int `json:"required_approvals,omitempty"`
	// Votes are the approvals given so far.
	Votes []Vote `json:"votes,omitempty"`
	// AllowDenyReason and AllowEdit offer "Deny with reason…" and "Edit
	// arguments…" on an approval (see Choices).
	AllowDenyReason bool `json:"allow_deny_reason,omitempty"`
	AllowEdit       bool `json:"allow_edit,omitempty"`
	// Confirm asks for a confirmation before an approval takes effect (the
	// route's confirm: true).
	Confirm bool `json:"confirm,omitempty"`
	// Rule says why the call waits for a person (RuleTool, …);
	// PolicyError why the route's policy could not decide it; AutoApprove
	// the route's auto_approve, which did not approve it.
	Rule        string `json:"rule,omitempty"`
	PolicyError string `json:"policy_error,omitempty"`
	AutoApprove string `json:"auto_approve,omitempty"`
	// GrantChoices are the "Approve for …" lengths offered (the route's
	// grants: on a route with one required approval).
	GrantChoices []time.Duration `json:"grant_choices,omitempty"`
	// AlwaysAllow is the coding agent's always-allow rule in its own words
	// ("Bash(npm test:*)"), offered as "Approve and always allow" (the
	// route's offer_always_allow, on a route with one required approval);
	// AlwaysAllowWhere says where the agent keeps it.
	AlwaysAllow      string `json:"always_allow,omitempty"`
	AlwaysAllowWhere string `json:"always_allow_where,omitempty"`
	// EscalatedTo, once a pending call has escalated, are the user and
	// usergroup ids that may now decide it too.
	EscalatedTo []string `json:"escalated_to,omitempty"`
	// State is where the call stands.
	State CallStatus `json:"state"`
	// DecidedBy is who decided: a user id, "policy:<route>", or the name of
	// an API client.
	DecidedBy string    `json:"decided_by,omitempty"`
	DecidedAt time.Time `json:"decided_at"`
	// Reason is the denial reason, the failure message, or why the call was
	// cancelled.
	Reason string `json:"reason,omitempty"`
	// OverrideArgs are the arguments the call runs with when it was
	// approved with edited arguments.
	OverrideArgs json.RawMessage `json:"override_args,omitempty"`
	// Answer is the answer to a question or the external result.
	Answer json.RawMessage `json:"answer,omitempty"`
	// Outcome is what happened when the tool ran, once known.
	Outcome *Outcome `json:"outcome,omitempty"`
	// StepUp is how the approval that decided the call was verified
	// beyond the click (a passkey, a one-time code), or nil.
	StepUp *StepUp `json:"step_up,omitempty"`
	// PromptAgent names the coding agent ("Claude Code") of a permission
	// prompt; its view leads with what the tool will do.
	PromptAgent string `json:"prompt_agent,omitempty"`
	// Change is what a coding agent's own tool call changes (its command,
	// diff, content or patch), built from Args (view_change.go); nil for
	// any other call, whose Args are shown as they are.
	Change *Change `json:"change,omitempty"`
	// EditedChange is the change of OverrideArgs, what the call runs with
	// when it was approved with edited arguments; nil otherwise.
	EditedChange *Change `json:"edited_change,omitempty"`
	// Batch, on a pending approval of a request with at least two pending
	// approvals, is what "Approve all" and "Deny all" decide
	// (Service.DecideAll); nil otherwise.
	Batch *BatchView `json:"batch,omitempty"`
}

// BatchView is what a batch decision on a call's request covers: its
// pending approvals (Request.PendingApprovals), this call among them.
type BatchView struct {
	// Count is how many there are (at least 2).
	Count int `json:"count"`
	// Tools are their tools as people see them, in the order of the
	// request's calls, a tool called twice named twice.
	Tools []string `json:"tools"`
}

// Viewer builds CallViews: from a request and what the routing file and
// the tools say of its calls. It holds nothing of a surface, so that every
// surface shows a call alike.
type Viewer struct {
	// Routes are the routing file's routes; nil: none.
	Routes *routing.Routes
	// Tools supplies the tools' confirmation texts and tells which tools
	// can be edited (their schema is known); nil: none.
	Tools Tools
	// Now is the clock that says whether a call has escalated; nil:
	// time.Now.
	Now func() time.Time
}

// View returns the view of call c of r.
func (vw Viewer) View(r *Request, c *Call) CallView {
	call, _ := r.Requests.Call(c.ID)
	args, err := call.ArgsObject()
	if err != nil {
		args = call.Args
	}
	v := CallView{
		Token: r.Token, ToolCallID: c.ID, Kind: c.Kind, ToolName: call.ToolName, ToolLabel: vw.ToolLabel(call.ToolName), Args: args,
		Requester: cmp.Or(r.Origin.User, r.Origin.Client), RequesterIsUser: r.Origin.User != "", RequesterClaim: r.Origin.Claim(),
		SourceChannel: r.Origin.Channel, Context: r.Context, Route: c.Route,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, RequiredApprovals: max(c.Required, 1),
		Votes: c.Votes, State: c.Status, DecidedBy: c.DecidedBy, DecidedAt: c.DecidedAt,
		Reason: c.Reason, OverrideArgs: c.OverrideArgs, Answer: c.Answer, Outcome: c.Outcome, StepUp: c.StepUp,
		Rule: c.Rule, PolicyError: c.PolicyError,
		AllowDenyReason: c.Kind == agentrunner.KindApproval,
		AllowEdit:       c.Kind == agentrunner.KindApproval && vw.Editable(r, c.ID),
	}
	if route := vw.route(c.Route); route != nil {
		v.Mentions = route.Usergroups
		v.Confirm = route.Confirm
		v.AutoApprove = route.AutoApprove
		if c.Kind == agentrunner.KindApproval && c.Required <= 1 {
			v.GrantChoices = route.GrantChoices()
			if a := offeredRule(r, c.ID); a != nil && route.OfferAlwaysAllow {
				v.AlwaysAllow, v.AlwaysAllowWhere = a.Rule(), a.Where()
			}
		}
		if route.Escalated(r.CreatedAt, r.ExpiresAt, vw.now()) {
			v.EscalatedTo = append(slices.Clone(route.Escalate.Users), route.Escalate.Usergroups...)
		}
	}
	v.Batch = vw.batch(r, c)
	if agent := CallAgent(r, c.ID); agent != "" {
		v.Change = BuildChange(agent, call.ToolName, args, r.Requests.Metadata[c.ID])
		if len(c.OverrideArgs) > 0 && v.Change != nil {
			// The hook's diff was against the content asked for: not this.
			v.EditedChange = BuildChange(agent, call.ToolName, c.OverrideArgs, nil)
		}
	}
	if agent := PromptAgent(r, c.ID); agent != "" {
		// The agent's own tool (Bash, Edit): slackbot has no confirmation
		// text of its own for it.
		v.PromptAgent = agent
		if v.Change != nil {
			v.Confirmation = v.Change.Lead()
		}
		return v
	}
	for _, p := range vw.pendingCalls(r.Requests) {
		if p.Call.ToolCallID == c.ID {
			v.Confirmation = p.Message
			if p.Message == agentrunner.DefaultConfirmation(p.Call) {
				p.Call.ToolName = v.ToolLabel
				v.Confirmation = agentrunner.DefaultConfirmation(p.Call)
				if v.Change != nil {
					// The change below shows the arguments; the JSON of
					// the default text would only repeat them.
					v.Confirmation = v.Change.Lead()
				}
			}
		}
	}
	return v
}

// batch is the BatchView of call c of r, or nil when no batch is offered
// on it: it is not a pending approval, or the only one.
func (vw Viewer) batch(r *Request, c *Call) *BatchView {
	if c.Kind != agentrunner.KindApproval || c.Status != CallPending {
		return nil
	}
	pending := r.PendingApprovals()
	if len(pending) < 2 {
		return nil
	}
	b := &BatchView{Count: len(pending)}
	for _, p := range pending {
		call, _ := r.Requests.Call(p.ID)
		b.Tools = append(b.Tools, vw.ToolLabel(call.ToolName))
	}
	return b
}

// ToolLabel is how people see a tool: "<server>.<tool>" for a tool of one
// of the routing file's MCP servers (which the model calls
// "<server>__<tool>"), as the tool's confirmation names it; else its name.
func (vw Viewer) ToolLabel(name string) string {
	if vw.Routes != nil {
		if server, tool, ok := vw.Routes.MCPTool(name); ok {
			return server + "." + tool
		}
	}
	return name
}

// Editable reports whether call id of r can be edited before it is
// approved: slackbot knows the tool's schema, or the API client sent it
// (ArgsSchemaKey), so an approver sees its problems before the call runs;
// or it is a coding agent's permission prompt, whose input (Bash's
// command) is the agent's to check, as when a person edits it in the
// agent's own prompt.
func (vw Viewer) Editable(r *Request, id string) bool {
	return Editable(vw.Tools, r, id) || PromptAgent(r, id) != "" || agentEditable(r, id)
}

// PromptAgent names the coding agent of a permission prompt
// (MetaPermissionPrompt) on call id of r, or "".
func PromptAgent(r *Request, id string) string {
	agent, _ := r.Requests.Metadata[id][MetaPermissionPrompt].(string)
	return agent
}

func (vw Viewer) route(name string) *routing.Route {
	if vw.Routes == nil {
		return nil
	}
	return vw.Routes.Named(name)
}

func (vw Viewer) now() time.Time {
	if vw.Now == nil {
		return time.Now()
	}
	return vw.Now()
}

func (vw Viewer) pendingCalls(req agentrunner.DeferredToolRequests) []agentrunner.PendingToolCall {
	if vw.Tools != nil {
		return vw.Tools.PendingCalls(req)
	}
	var out []agentrunner.PendingToolCall
	for _, id := range req.IDs() {
		c, _ := req.Call(id)
		out = append(out, agentrunner.PendingToolCall{Call: c, Kind: req.Kind(id), Message: agentrunner.DefaultConfirmation(c)})
	}
	return out
}

// ChoiceKind is one thing a person may do about a pending call.
type ChoiceKind string

// The choices on a call. Those that need a form (a reason, arguments, an
// answer) say so through Choice.Form.
const (
	ChooseApprove        ChoiceKind = "approve"
	ChooseDeny           ChoiceKind = "deny"
	ChooseApproveFor     ChoiceKind = "approve_for"
	ChooseApproveAlways  ChoiceKind = "approve_always"
	ChooseDenyWithReason ChoiceKind = "deny_reason"
	ChooseEdit           ChoiceKind = "edit"
	ChooseAnswer         ChoiceKind = "answer"
	// ChooseApproveAll and ChooseDenyAll decide every pending approval of
	// the call's request (CallView.Batch; Service.DecideAll).
	ChooseApproveAll ChoiceKind = "approve_all"
	ChooseDenyAll    ChoiceKind = "deny_all"
)

// Choice is one choice a person has on a call, as a surface offers it.
type Choice struct {
	Kind ChoiceKind
	// Grant is the length an ChooseApproveFor grants.
	Grant time.Duration
	// Rule is the agent's rule a ChooseApproveAlways gives it.
	Rule string
	// Confirm: the surface asks "are you sure?" (ConfirmWords, or
	// BatchConfirmWords for a batch) before it decides.
	Confirm bool
	// Batch is what a ChooseApproveAll or ChooseDenyAll decides.
	Batch *BatchView
}

// Form reports whether the choice needs a form before it decides: a
// denial's reason, edited arguments, an answer.
func (c Choice) Form() bool {
	switch c.Kind {
	case ChooseDenyWithReason, ChooseEdit, ChooseAnswer:
		return true
	}
	return false
}

// Choices are what a person may do about the call, in the order a surface
// offers them: nothing once it is decided or ended, nor while it waits
// for an external result; an answer for a question; else Approve
// (confirmed first when the route says so), Deny, Approve for each of the
// route's grant lengths (on an approval), Approve and always allow the
// agent's rule where offered, Deny with reason and Edit arguments where
// allowed, then Approve all and Deny all on a request with several pending
// approvals (Batch). Which person may take them is the Service's to
// authorize, on any surface alike.
func (v CallView) Choices() []Choice {
	if cmp.Or(v.State, CallPending) != CallPending {
		return nil
	}
	kind := cmp.Or(v.Kind, agentrunner.KindApproval)
	switch kind {
	case agentrunner.KindExternal:
		return nil
	case agentrunner.KindQuestion:
		return []Choice{{Kind: ChooseAnswer}}
	}
	out := []Choice{{Kind: ChooseApprove, Confirm: v.Confirm}, {Kind: ChooseDeny}}
	if kind == agentrunner.KindApproval {
		for _, d := range v.GrantChoices {
			out = append(out, Choice{Kind: ChooseApproveFor, Grant: d, Confirm: v.Confirm})
		}
		if v.AlwaysAllow != "" {
			out = append(out, Choice{Kind: ChooseApproveAlways, Rule: v.AlwaysAllow, Confirm: v.Confirm})
		}
	}
	if v.AllowDenyReason {
		out = append(out, Choice{Kind: ChooseDenyWithReason})
	}
	if v.AllowEdit {
		out = append(out, Choice{Kind: ChooseEdit})
	}
	if kind == agentrunner.KindApproval && v.Batch != nil && v.Batch.Count >= 2 {
		// They decide calls this card does not show: always confirmed,
		// naming them.
		out = append(out, Choice{Kind: ChooseApproveAll, Confirm: true, Batch: v.Batch},
			Choice{Kind: ChooseDenyAll, Confirm: true, Batch: v.Batch})
	}
	return out
}
