package approval_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/approvaltest"
	"github.com/slackapprove/slackbot/internal/clocktest"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

const alwaysAllowRoutes = `
routes:
  - name: coding-agents
    when: {tools: ["Bash"]}
    channel: CAGENTS
    approvers: {users: ["UALICE", "UBOB"]}
    offer_always_allow: true
    timeout: 2h
    escalate: {after: 30m, channel: CONCALL, approvers: {users: ["UDAVE"]}}
  - name: self-approved
    when: {tools: ["Selfish"]}
    channel: CAGENTS
    approvers: {users: ["UALICE"]}
    allow_self_approval: true
    offer_always_allow: true
  - name: plain
    when: {tools: ["Write"]}
    channel: CAGENTS
    approvers: {users: ["UALICE"]}
`

// npmRule is Claude Code 2.1.332's suggestion for `npm test --silent`.
const npmRule = `{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test *"}],"behavior":"allow","destination":"localSettings"}`

func newAlwaysAllowFixture(t *testing.T) (*fixture, *clocktest.Clock) {
	t.Helper()
	routes, err := routing.ParseRoutes([]byte(alwaysAllowRoutes), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktest.Stopped(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	rdb, prefix := redistest.Embedded(t)
	st := store.New(rdb, store.Options{Prefix: prefix, Now: clock.Now})
	f := &fixture{Store: st, Poster: approvaltest.NewPoster(), Metrics: &metrics{}}
	f.Svc = approval.New(approval.Config{Store: st, Poster: f.Poster, Directory: approvaltest.Directory{}, Routes: routes, Metrics: f.Metrics, Now: clock.Now})
	t.Cleanup(f.Svc.Close)
	return f, clock
}

// openOffering opens, as the API key billing for Claude Code in
// /home/dev/shop (or as the Slack user origin.User), one approval of tool
// whose metadata offers rule (none when rule is "").
func openOffering(t *testing.T, f *fixture, origin approval.Origin, tool, rule string) (*approval.Request, error) {
	t.Helper()
	token := agentrunner.NewToken()
	req := agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{approvaltest.Call("c1", tool, `{"command":"npm test --silent"}`)}}
	if rule != "" {
		req.Metadata = map[string]map[string]any{"c1": {agentrunner.MetaAlwaysAllow: json.RawMessage(rule), agentrunner.MetaAgentSession: "s-8f3b"}}
	}
	if _, err := f.Svc.Open(t.Context(), approval.Opening{Token: token, Requests: req, Origin: origin}); err != nil {
		return nil, err
	}
	return f.Store.Get(t.Context(), token)
}

var claudeCode = approval.Origin{Client: "billing", Name: "Claude Code (/home/dev/shop)"}

// alwaysClick is user's "Approve and always allow" on the card of c1.
func alwaysClick(t *testing.T, f *fixture, r *approval.Request, user string, edit json.RawMessage) (*approval.Decided, error) {
	t.Helper()
	ref, _ := f.Poster.Card("c1")
	return f.Svc.Decide(t.Context(), r.Token, approval.Decider{User: user, Message: ref},
		approval.Decision{CallID: "c1", By: user, Action: approval.ActionApprove, AlwaysAllow: true, OverrideArgs: edit})
}

// The card offers the rule in the agent's words; the decision approves
// and hands back, in the results' metadata, exactly the rule offered;
// the audit stream says who allowed which rule for which project and
// session. A plain approval hands back no rule.
func TestAlwaysAllowHandsBackTheOfferedRule(t *testing.T) {
	f, _ := newAlwaysAllowFixture(t)
	r, err := openOffering(t, f, claudeCode, "Bash", npmRule)
	if err != nil {
		t.Fatal(err)
	}
	v := approval.Viewer{Routes: f.Svc.Routes()}.View(r, r.Call("c1"))
	if v.AlwaysAllow != "Bash(npm test *)" || !strings.Contains(v.AlwaysAllowWhere, "settings.local.json") {
		t.Errorf("the view offers %q in %q; want Bash(npm test *) in the local settings", v.AlwaysAllow, v.AlwaysAllowWhere)
	}
	if ch := v.Choices(); ch[len(ch)-2].Kind != approval.ChooseApproveAlways || approval.ChoiceLabel(ch[len(ch)-2]) != "Approve and always allow Bash(npm test *)" {
		t.Errorf("choices %+v: want Approve and always allow Bash(npm test *) before Deny with reason", ch)
	}
	d, err := alwaysClick(t, f, r, "UALICE", nil)
	if err != nil || d.Call.Status != approval.CallApproved {
		t.Fatalf("always allow: %+v, %v", d, err)
	}
	got, _ := f.Store.Get(t.Context(), r.Token)
	rule, err := agentrunner.AlwaysAllowFrom(got.Results(nil).Metadata["c1"][agentrunner.MetaAlwaysAllow])
	want, _ := agentrunner.ParseAlwaysAllow(json.RawMessage(npmRule))
	if err != nil || !rule.Equal(want) {
		t.Errorf("the results' rule %+v, %v; want the one offered", rule, err)
	}
	events, err := f.Store.ReadAudit(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var detail string
	for _, ev := range events {
		if ev.Type == approval.EventAlwaysAllowed {
			detail = ev.Detail
		}
	}
	if want := "UALICE allowed Bash(npm test *) in localSettings for api:billing as Claude Code (/home/dev/shop), session s-8f3b"; detail != want {
		t.Errorf("audited %q, want %q", detail, want)
	}

	plain, _ := openOffering(t, f, claudeCode, "Bash", npmRule)
	if _, err := f.Click(t, plain, "UBOB", "c1", approval.ActionApprove); err != nil {
		t.Fatal(err)
	}
	got, _ = f.Store.Get(t.Context(), plain.Token)
	if md := got.Results(nil).Metadata["c1"]; md[agentrunner.MetaAlwaysAllow] != nil {
		t.Errorf("a plain approval handed back a rule: %v", md)
	}
}

// "Approve and always allow" is refused, leaving the call pending, where
// the route does not offer it, where the agent offered no rule, with
// edited arguments, to someone who is not an approver or decides only
// because the call escalated, and to the requester (self-approval).
func TestAlwaysAllowRefused(t *testing.T) {
	f, clock := newAlwaysAllowFixture(t)
	for _, tt := range []struct {
		name, tool, rule, user string
		origin                 approval.Origin
		edit                   json.RawMessage
		escalate               bool
		want                   string
	}{
		{"a route without offer_always_allow", "Write", npmRule, "UALICE", claudeCode, nil, false, approval.EINVALID},
		{"no rule offered", "Bash", "", "UALICE", claudeCode, nil, false, approval.EINVALID},
		{"edited arguments", "Bash", npmRule, "UALICE", claudeCode, json.RawMessage(`{"command":"npm test"}`), false, approval.EINVALID},
		{"not an approver", "Bash", npmRule, "UMALLORY", claudeCode, nil, false, approval.ENOTAPPROVER},
		{"an escalation approver", "Bash", npmRule, "UDAVE", claudeCode, nil, true, approval.ENOTAPPROVER},
		{"the requester", "Bash", npmRule, "UALICE", approval.Origin{Team: "T1", Channel: "CGENERAL", User: "UALICE"}, nil, false, approval.ESELFAPPROVAL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := openOffering(t, f, tt.origin, tt.tool, tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			if tt.escalate {
				clock.Add(31 * time.Minute)
			}
			if _, err := alwaysClick(t, f, r, tt.user, tt.edit); approval.ErrorCode(err) != tt.want {
				t.Errorf("always allow: %v, want %s", err, tt.want)
			}
			if got, _ := f.Store.Get(t.Context(), r.Token); got.Call("c1").Status != approval.CallPending {
				t.Errorf("the refused decision decided the call: %s", got.Call("c1").Status)
			}
		})
	}
}

// Only the Service puts a rule in the results, the one offered: a
// person's decision that carries one in its metadata records none, and
// an API client's answer that carries one is refused whole.
func TestAlwaysAllowRuleNotForged(t *testing.T) {
	f, _ := newAlwaysAllowFixture(t)
	forged := map[string]any{agentrunner.MetaAlwaysAllow: json.RawMessage(strings.Replace(npmRule, "npm test *", "*", 1))}

	r, _ := openOffering(t, f, claudeCode, "Bash", npmRule)
	ref, _ := f.Poster.Card("c1")
	if _, err := f.Svc.Decide(t.Context(), r.Token, approval.Decider{User: "UALICE", Message: ref},
		approval.Decision{CallID: "c1", By: "UALICE", Action: approval.ActionApprove, Metadata: forged}); err != nil {
		t.Fatal(err)
	}
	got, _ := f.Store.Get(t.Context(), r.Token)
	if md := got.Results(nil).Metadata["c1"]; md[agentrunner.MetaAlwaysAllow] != nil {
		t.Errorf("a person's decision recorded a rule from its metadata: %v", md)
	}

	self, err := openOffering(t, f, claudeCode, "Selfish", npmRule)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Svc.Decide(t.Context(), self.Token, approval.Decider{Client: "billing"},
		approval.Decision{CallID: "c1", By: "bot", Action: approval.ActionApprove, Metadata: forged})
	if approval.ErrorCode(err) != approval.EINVALID || !strings.Contains(approval.ErrorMessage(err), agentrunner.MetaAlwaysAllow) {
		t.Errorf("an API client's answer with a rule: %v, want EINVALID naming the key", err)
	}
}

// A request that offers, under the rule's key, anything but an
// always-allow rule for an approval is refused with nothing recorded.
func TestOpenRefusesAnOfferThatIsNoRule(t *testing.T) {
	f, _ := newAlwaysAllowFixture(t)
	for _, rule := range []string{
		`{"type":"setMode","mode":"bypassPermissions","destination":"session"}`,
		`{"type":"addRules","rules":[{"toolName":"Bash"}],"behavior":"deny","destination":"session"}`,
		`{"type":"addRules","rules":[{"toolName":"Bash"}],"behavior":"allow","destination":"session","extra":1}`,
		`{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"` + strings.Repeat("x", 2100) + `"}],"behavior":"allow","destination":"session"}`,
		`"Bash(*)"`,
	} {
		if _, err := openOffering(t, f, claudeCode, "Bash", rule); approval.ErrorCode(err) != approval.EINVALID {
			t.Errorf("offer %.60s: %v, want EINVALID", rule, err)
		}
	}
	if p, _, _ := f.Store.Pending(t.Context(), 10, 0); len(p) != 0 {
		t.Errorf("%d requests recorded, want none", len(p))
	}
}
