package approval

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/routing"
)

// The kinds of Scheduled work: what a pending call's route asks for while
// nobody decides it.
const (
	// Remind: mention the approvers in the card's thread (routing's
	// remind_every, at most routing.MaxReminders times).
	Remind = "remind"
	// Escalate: the route's escalation approvers may decide too, and the
	// card is linked in the escalation channel (routing's escalate).
	Escalate = "escalate"
)

// Scheduled is work due about one call at a time: a reminder (N counts
// them from 1) or its escalation.
type Scheduled struct {
	Kind   string
	CallID string
	N      int
	At     time.Time
}

// Scheduler keeps Scheduled work durably and, once it is due, hands it to
// one replica, which calls Service.Attend. store.JobQueue implements it.
// Scheduling the same work twice schedules it once.
type Scheduler interface {
	Schedule(ctx context.Context, token string, work ...Scheduled) error
}

// Notice is what Attend found people must be told about a call still
// waiting: the door that posts it (bot) says it in its own words.
type Notice struct {
	Scheduled
	Request *Request
	Call    *Call
	Route   *routing.Route
}

// schedule asks the Scheduler for c's reminders and escalation, once its
// card is posted. A failure is logged: the card is up, only the nudges
// are lost.
func (s *Service) schedule(ctx context.Context, r *Request, c *Call) {
	route := s.Route(c.Route)
	if s.scheduler == nil || route == nil {
		return
	}
	var work []Scheduled
	for i, at := range route.Reminders(r.CreatedAt, r.ExpiresAt) {
		work = append(work, Scheduled{Kind: Remind, CallID: c.ID, N: i + 1, At: at})
	}
	if at, ok := route.EscalatesAt(r.CreatedAt, r.ExpiresAt); ok {
		work = append(work, Scheduled{Kind: Escalate, CallID: c.ID, At: at})
	}
	if len(work) == 0 {
		return
	}
	if err := s.scheduler.Schedule(ctx, r.Token, work...); err != nil {
		s.log.ErrorContext(ctx, "schedule reminders and escalation", "err", err, "call", c.ID, "route", c.Route)
	}
}

// Attend is called when scheduled work is due. It returns the Notice to
// post, or nil when there is nothing to say: the call was decided, the
// request ended or expired, the card was never posted, or the route no
// longer asks for it (the routing file changed). It changes nothing;
// Attended records that the notice was posted.
func (s *Service) Attend(ctx context.Context, token string, w Scheduled) (*Notice, error) {
	r, err := s.store.Get(ctx, token)
	if ErrorCode(err) == ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("attend %s: %w", w.Kind, err)
	}
	c := r.Call(w.CallID)
	if c == nil || r.State != StatePending || c.Status != CallPending || !s.now().Before(r.ExpiresAt) || c.Message.ID == "" {
		return nil, nil
	}
	route := s.Route(c.Route)
	switch {
	case route == nil:
		return nil, nil
	case w.Kind == Remind && (route.RemindEvery <= 0 || w.N < 1 || w.N > routing.MaxReminders):
		return nil, nil
	case w.Kind == Escalate && route.Escalate == nil:
		return nil, nil
	case w.Kind != Remind && w.Kind != Escalate:
		return nil, Errorf(EINVALID, "attend: unknown kind %q", w.Kind)
	}
	return &Notice{Scheduled: w, Request: r, Call: c, Route: route}, nil
}

// Attended records in the audit stream that n was posted and, for an
// escalation, first brings the card up to date (it names who may now
// decide): when that fails, the caller tries again and nothing was
// audited yet, so the audit stream says it once.
func (s *Service) Attended(ctx context.Context, n *Notice) error {
	event, detail := "reminded", strconv.Itoa(n.N)
	if n.Kind == Escalate {
		if err := s.UpdateCard(ctx, n.Request.Token, n.Call.ID); err != nil {
			return err
		}
		event, detail = "escalated", n.Route.Escalate.Channel
	}
	if err := s.store.Note(ctx, n.Request.Token, n.Call.ID, event, detail); err != nil {
		s.log.ErrorContext(ctx, "audit a "+n.Kind, "err", err, "call", n.Call.ID)
	}
	s.log.InfoContext(ctx, event, "route", n.Route.Name, "call", n.Call.ID, "n", n.N)
	return nil
}

// Escalated reports whether call c of r has escalated by now: its route
// escalates and the time has come, so its escalation approvers may decide
// too.
func (s *Service) Escalated(r *Request, c *Call) bool {
	route := s.Route(c.Route)
	if route == nil {
		return false
	}
	return route.Escalated(r.CreatedAt, r.ExpiresAt, s.now())
}

// noteEscalation records in the audit stream that a person decided c only
// because it had escalated: they are one of its escalation approvers, not
// one of its route's own.
func (s *Service) noteEscalation(ctx context.Context, r *Request, c *Call, by Decider, action Action) {
	if by.User == "" || !s.Escalated(r, c) {
		return
	}
	route := s.Route(c.Route)
	if own, err := route.IsApprover(ctx, by.User, s.dir.Members); err != nil || own {
		return
	}
	if err := s.store.Note(ctx, r.Token, c.ID, "escalation_decided", string(action)+" by "+by.User); err != nil {
		s.log.ErrorContext(ctx, "audit a decision after escalation", "err", err, "call", c.ID)
	}
}

// Why a call waits for a person, as Call.Rule records it.
const (
	// RuleTool: the tool always requires approval.
	RuleTool = "tool"
	// RuleArguments: the tool asked for approval of these arguments.
	RuleArguments = "arguments"
	// RuleMCP: an MCP server's tool that its server's read_only does not
	// list.
	RuleMCP = "mcp"
	// RuleClient: an API client asked for the decision.
	RuleClient = "client"
)

// maxPolicyError bounds the policy error kept on a call.
const maxPolicyError = 500

// explain records on c why it waits for a person: the rule that deferred
// it and, when the route's policy could not decide it, why not. Only
// approvals have policies.
func (s *Service) explain(ctx context.Context, c *Call, call agentrunner.ToolCallPart, route *routing.Route, o Opening, md map[string]any) {
	if c.Kind != agentrunner.KindApproval {
		return
	}
	origin := o.Origin
	fromClient := origin.User == "" && origin.Client != ""
	if fromClient {
		origin = Origin{Client: origin.Client} // policies judge the client, never its free-text name
	}
	switch _, _, mcp := s.routes.MCPTool(call.ToolName); {
	case mcp:
		c.Rule = RuleMCP
	case fromClient:
		c.Rule = RuleClient
	default:
		c.Rule = s.toolRule(call.ToolName)
	}
	if route == nil || !route.HasPolicy() {
		return
	}
	pol := &Policy{Routes: s.routes, Now: s.now, Log: s.log}
	if _, err := pol.evaluate(ctx, route, call, &origin, md); err != nil {
		msg := err.Error()
		if len(msg) > maxPolicyError {
			msg = msg[:maxPolicyError] + "…"
		}
		c.PolicyError = strings.ToValidUTF8(msg, "")
	}
}

// toolRule says which of a run's tools' rules deferred a call of name.
func (s *Service) toolRule(name string) string {
	if s.tools == nil {
		return RuleTool
	}
	if t, ok := s.tools.Tool(name); ok && !t.NeedsApproval() {
		return RuleArguments
	}
	return RuleTool
}
