package bot_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// apiRoutes: refunds under $100 from the billing client pass by policy,
// deletions are refused by policy, everything in "ops" waits 10 minutes.
const apiRoutes = `
default_timeout: 1h
routes:
  - name: refunds
    when: {tools: ["issue_refund"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    timeout: 30m
    auto_approve: 'requester == "api:billing" && args.amount <= 100'
  - name: deletions
    when: {tools: ["delete_*"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
    required_approvals: 2
    auto_deny: 'args.path.startsWith("/etc")'
  - name: ops
    when: {tools: ["deploy_*"]}
    channel: C0GENERAL
    approvers: {users: [U0BOB]}
    timeout: 10m
    confirm: true
`

// openEnv is an approval.Service that posts with bot.Cards to a fake
// Slack, over the real store on the embedded Redis.
type openEnv struct {
	svc   *approval.Service
	cards *bot.Cards
	store *store.Store
	slack *slackfake.Server
	now   time.Time
	// api is the Slack client of the cards, groups the Service's Directory.
	api    bot.SlackAPI
	groups *bot.Usergroups
}

// newOpenEnv is an openEnv over the production Slack client
// (bot.SlackClient, whose chat.update reads only ok/error).
func newOpenEnv(t *testing.T) *openEnv {
	t.Helper()
	return newOpenEnvWith(t, leanClient)
}

// slackClients make the Slack client of a test's Cards: the production
// one, and slack-go's own (whose chat.update decodes the echoed message).
var slackClients = map[string]func(token, apiURL string) bot.SlackAPI{"lean": leanClient, "slack-go": slackGoClient}

func leanClient(token, apiURL string) bot.SlackAPI { return bot.NewSlackClient(token, apiURL, nil) }
func slackGoClient(token, apiURL string) bot.SlackAPI {
	return slack.New(token, slack.OptionAPIURL(apiURL))
}

func newOpenEnvWith(t *testing.T, client func(token, apiURL string) bot.SlackAPI) *openEnv {
	t.Helper()
	now := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	fake, srv := slackfaketest.NewTestServer(t, slackfake.WithDemoWorkspace(), slackfake.WithClock(clock))
	rdb, prefix := redistest.Embedded(t)
	st := store.New(rdb, store.Options{Prefix: prefix, Now: clock})
	api := client(fake.Token(), slackfaketest.APIURL(srv))
	routes := parseRoutes(t, apiRoutes)
	cards := bot.NewCards(bot.CardsConfig{Slack: api, Routes: routes})
	groups := &bot.Usergroups{Slack: api}
	svc := approval.New(approval.Config{
		Store: st, Poster: cards, Directory: groups, Routes: routes, Now: clock,
	})
	t.Cleanup(svc.Close)
	return &openEnv{svc: svc, cards: cards, store: st, slack: fake, now: now, api: api, groups: groups}
}

func parseRoutes(t *testing.T, src string) *routing.Routes {
	t.Helper()
	rs, err := routing.ParseRoutes([]byte(src), t.Name()+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func call(id, tool, args string) agentrunner.ToolCallPart {
	return agentrunner.ToolCallPart{ToolName: tool, Args: json.RawMessage(args), ToolCallID: id}
}

func TestOpenThroughCards(t *testing.T) {
	type callWant struct {
		ID, Route string
		Required  int
		State     approval.CallStatus
		By        string
	}
	tests := []struct {
		name      string
		req       approval.Opening
		wantCalls []callWant
		wantCards map[string]int // channel: cards posted
		wantTTL   time.Duration
	}{{
		name: "routed by tool name; policies see the client",
		req: approval.Opening{Origin: approval.Origin{Client: "billing"}, Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
			call("r1", "issue_refund", `{"amount":50}`),
			call("r2", "issue_refund", `{"amount":500}`),
			call("d1", "delete_file", `{"path":"/etc/passwd"}`),
			call("d2", "delete_file", `{"path":"/tmp/x"}`),
			call("u1", "launch_rocket", `{}`),
		}}},
		wantCalls: []callWant{
			{"r1", "refunds", 1, approval.CallApproved, "policy:refunds"},
			{"r2", "refunds", 1, approval.CallPending, ""},
			{"d1", "deletions", 2, approval.CallDenied, "policy:deletions"},
			{"d2", "deletions", 2, approval.CallPending, ""},
			{"u1", "", 1, approval.CallDenied, "policy:none"},
		},
		wantCards: map[string]int{"C0APPROVALS": 2},
		wantTTL:   30 * time.Minute,
	}, {
		name: "a free-text requester does not pass for the client",
		req: approval.Opening{Origin: approval.Origin{Client: "support", Name: "api:billing"}, Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
			call("r1", "issue_refund", `{"amount":50}`),
		}}},
		wantCalls: []callWant{{"r1", "refunds", 1, approval.CallPending, ""}},
		wantCards: map[string]int{"C0APPROVALS": 1},
		wantTTL:   30 * time.Minute,
	}, {
		name: "a named route takes the calls its tools match",
		req: approval.Opening{Origin: approval.Origin{Client: "billing"}, Route: "ops", Requests: agentrunner.DeferredToolRequests{
			Approvals: []agentrunner.ToolCallPart{call("a1", "deploy_web", `{"amount":50}`)},
			Calls:     []agentrunner.ToolCallPart{call("x1", "deploy_db", `{}`)},
		}},
		wantCalls: []callWant{
			{"a1", "ops", 1, approval.CallPending, ""},
			{"x1", "ops", 1, approval.CallPending, ""},
		},
		wantCards: map[string]int{"C0GENERAL": 2},
		wantTTL:   10 * time.Minute,
	}, {
		name: "the client's timeout wins, capped at a week",
		req: approval.Opening{Origin: approval.Origin{Client: "billing"}, Timeout: 30 * 24 * time.Hour, Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
			call("g1", "deploy_web", `{}`),
		}}},
		wantCalls: []callWant{{"g1", "ops", 1, approval.CallPending, ""}},
		wantCards: map[string]int{"C0GENERAL": 1},
		wantTTL:   approval.MaxTimeout,
	}, {
		name: "external calls no route matches fail at once",
		req: approval.Opening{Origin: approval.Origin{Client: "billing"}, Requests: agentrunner.DeferredToolRequests{Calls: []agentrunner.ToolCallPart{
			call("x1", "fetch_report", `{}`),
		}}},
		wantCalls: []callWant{{"x1", "", 1, approval.CallFailed, "policy:none"}},
		wantCards: map[string]int{},
		wantTTL:   approval.DefaultTimeout,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newOpenEnv(t)
			tt.req.Token = agentrunner.NewToken()
			if _, err := e.svc.Open(t.Context(), tt.req); err != nil {
				t.Fatalf("Open: %v", err)
			}
			a, err := e.store.Get(t.Context(), tt.req.Token)
			if err != nil {
				t.Fatal(err)
			}
			var got []callWant
			for _, c := range a.Calls {
				got = append(got, callWant{c.ID, c.Route, c.Required, c.Status, c.DecidedBy})
			}
			if diff := cmp.Diff(tt.wantCalls, got); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			cards := map[string]int{}
			for _, ch := range []string{"C0APPROVALS", "C0GENERAL"} {
				if n := len(e.slack.Messages(ch)); n > 0 {
					cards[ch] = n
				}
			}
			if diff := cmp.Diff(tt.wantCards, cards); diff != "" {
				t.Errorf("cards per channel (-want +got):\n%s", diff)
			}
			for _, c := range a.Calls {
				if (c.Status == approval.CallPending) != (c.Message.ID != "") {
					t.Errorf("call %s (%s): card %+v; want a card exactly for pending calls", c.ID, c.Status, c.Message)
				}
			}
			if got := a.ExpiresAt.Sub(e.now); got != tt.wantTTL {
				t.Errorf("expires in %v, want %v", got, tt.wantTTL)
			}
		})
	}
}

func TestOpenCard(t *testing.T) {
	e := newOpenEnv(t)
	token := agentrunner.NewToken()
	var created *approval.Request
	_, err := e.svc.Open(t.Context(), approval.Opening{
		Token: token, Origin: approval.Origin{Client: "support", Name: "Ticket bot <@U0ALICE>"},
		Context: "Customer *Bob* asked for a refund of order A-1002.",
		Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
			call("r1", "issue_refund", `{"amount":500,"order_id":"A-1002"}`),
		}},
		Recorded: func(_ context.Context, a *approval.Request) error {
			created = a
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if created == nil || created.Origin.Name != "Ticket bot <@U0ALICE>" || created.Origin.Client != "support" || created.Origin.Shown() != "Ticket bot <@U0ALICE>" || created.Context == "" {
		t.Fatalf("Recorded hook: got %+v; want the approval with requester and context", created)
	}
	msgs := e.slack.Messages("C0APPROVALS")
	if len(msgs) != 1 {
		t.Fatalf("got %d cards, want 1", len(msgs))
	}
	card := strings.ReplaceAll(string(msgs[0].BlocksJSON), `\u0026`, "&")
	for _, want := range []string{"Customer *Bob* asked for a refund of order A-1002.", "Ticket bot &lt;@U0ALICE&gt;", "(API)", "issue_refund"} {
		if !strings.Contains(card, want) {
			t.Errorf("card does not show %q:\n%s", want, card)
		}
	}
	if strings.Contains(card, "<@U0ALICE>") {
		t.Errorf("the free-text requester mentions someone:\n%s", card)
	}
}

func TestOpenRouteErrors(t *testing.T) {
	refund := agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("r1", "issue_refund", `{"amount":500}`)}}
	tests := []struct {
		name string
		req  approval.Opening
		want string // the error's code
		// why, when set, is in the error's message
		why string
	}{
		{"unknown route", approval.Opening{Route: "nope", Requests: refund}, approval.ENOROUTE, ""},
		{"named route not allowed", approval.Opening{Route: "ops", AllowedRoutes: []string{"refunds"}, Requests: refund}, approval.EFORBIDDEN, ""},
		{"matched route not allowed", approval.Opening{AllowedRoutes: []string{"ops"}, Requests: refund}, approval.EFORBIDDEN, ""},
		{"no routes allowed", approval.Opening{AllowedRoutes: []string{}, Requests: refund}, approval.EFORBIDDEN, ""},
		// A named route never judges a tool its when.tools do not match:
		// a key allowed only "refunds" cannot get delete_everything
		// approved by the refunds policy (amount <= 100) by naming it.
		{"named route for a tool it does not match", approval.Opening{Route: "refunds", AllowedRoutes: []string{"refunds"},
			Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("x1", "delete_everything", `{"amount":1}`)}}}, approval.EFORBIDDEN, "does not match the call's tool"},
		{"named route, one call of several it does not match", approval.Opening{Route: "refunds",
			Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
				call("r1", "issue_refund", `{"amount":1}`), call("x1", "delete_everything", `{"amount":1}`)}}}, approval.EFORBIDDEN, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newOpenEnv(t)
			tt.req.Token, tt.req.Origin.Client = agentrunner.NewToken(), "billing"
			_, err := e.svc.Open(t.Context(), tt.req)
			if approval.ErrorCode(err) != tt.want || !strings.Contains(approval.ErrorMessage(err), tt.why) {
				t.Fatalf("got %v, want %s (%q)", err, tt.want, tt.why)
			}
			if _, err := e.store.Get(t.Context(), tt.req.Token); !errors.Is(err, approval.ErrNotFound) {
				t.Errorf("a refused request was recorded (%v)", err)
			}
			if n := len(e.slack.Messages("C0APPROVALS")) + len(e.slack.Messages("C0GENERAL")); n != 0 {
				t.Errorf("a refused request posted %d cards", n)
			}
		})
	}
}

// A card Slack refuses ends its call with no decision, so the agent hears
// at once instead of waiting for the timeout; other cards still go out.
func TestOpenCardNotPosted(t *testing.T) {
	e := newOpenEnv(t)
	e.slack.ErrorNext("chat.postMessage", "channel_not_found", 1)
	token := agentrunner.NewToken()
	_, err := e.svc.Open(t.Context(), approval.Opening{Token: token, Origin: approval.Origin{Client: "billing"}, Requests: agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{call("d1", "delete_file", `{"path":"/a"}`), call("d2", "delete_file", `{"path":"/b"}`)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := e.store.Get(t.Context(), token)
	d1, d2 := a.Call("d1"), a.Call("d2")
	if d1.Status != approval.CallDenied || d1.DecidedBy != "slackbot" || !strings.HasPrefix(d1.Reason, agentrunner.NoDecisionPrefix) {
		t.Errorf("d1: got %s by %q (%q); want denied by slackbot with no decision", d1.Status, d1.DecidedBy, d1.Reason)
	}
	if d2.Status != approval.CallPending || d2.Message.ID == "" {
		t.Errorf("d2: got %s, card %+v; want pending with a card", d2.Status, d2.Message)
	}
}

// A card Slack refuses as too long (or as blocks it does not accept) is
// posted again minimal, with its buttons; an update Slack refuses is sent
// minimal, so a decided card never keeps live buttons.
func TestCardRefusedBySlackIsSentMinimal(t *testing.T) {
	for name, client := range slackClients {
		for _, code := range []string{"msg_blocks_too_long", "invalid_blocks"} {
			t.Run(name+"/"+code, func(t *testing.T) { cardRefusedIsSentMinimal(t, newOpenEnvWith(t, client), code) })
		}
	}
}

func cardRefusedIsSentMinimal(t *testing.T, e *openEnv, code string) {
	e.slack.ErrorNext("chat.postMessage", code, 1)
	token := agentrunner.NewToken()
	if _, err := e.svc.Open(t.Context(), approval.Opening{Token: token, Origin: approval.Origin{Client: "billing"}, Requests: agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{call("d1", "delete_file", `{"path":"/a"}`)},
	}}); err != nil {
		t.Fatal(err)
	}
	a, _ := e.store.Get(t.Context(), token)
	if c := a.Call("d1"); c.Status != approval.CallPending || c.Message.ID == "" {
		t.Fatalf("d1: %s, card %+v; want pending with a card", c.Status, c.Message)
	}
	msgs := e.slack.Messages("C0APPROVALS")
	if len(msgs) != 1 {
		t.Fatalf("%d cards posted, want 1", len(msgs))
	}
	if got := buttonIDs(msgs[0]); !slices.Contains(got, bot.ActionIDApprove) || !strings.Contains(string(msgs[0].BlocksJSON), "shortened") {
		t.Errorf("posted card has buttons %v; want the minimal card with Approve:\n%s", got, msgs[0].BlocksJSON)
	}

	// deletions take two approvals (memApprovals, which this test
	// used to run on, approved at the first).
	for _, by := range []string{"U0ALICE", "U0BOB"} {
		if _, err := e.store.Decide(t.Context(), token, approval.Decision{CallID: "d1", By: by, Action: approval.ActionApprove}); err != nil {
			t.Fatal(err)
		}
	}
	e.slack.ErrorNext("chat.update", code, 1)
	if err := e.svc.UpdateCards(t.Context(), token); err != nil {
		t.Fatalf("UpdateCards: %v", err)
	}
	m := e.slack.Messages("C0APPROVALS")[0]
	if got := buttonIDs(m); len(got) != 0 || !strings.Contains(string(m.BlocksJSON), "Approved") {
		t.Errorf("decided card has buttons %v; want the minimal approved card:\n%s", got, m.BlocksJSON)
	}
}

// Update finds a card whose message was never recorded (its poster died
// between posting and recording) by its marker, updates it in place and
// says where it is, for the Service to record.
func TestUpdateLocatesAnUnrecordedCard(t *testing.T) {
	e := newOpenEnv(t)
	token := agentrunner.NewToken()
	if _, err := e.svc.Open(t.Context(), approval.Opening{Token: token, Origin: approval.Origin{Client: "billing"}, Requests: agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{call("d1", "delete_file", `{"path":"/a"}`)},
	}}); err != nil {
		t.Fatal(err)
	}
	r, err := e.store.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Call("d1")
	posted := c.Message
	if posted.ID == "" {
		t.Fatal("no card recorded")
	}
	c.Message = approval.MessageRef{} // as if never recorded
	c.Status, c.DecidedBy = approval.CallDenied, "U0ALICE"
	ref, err := e.cards.Update(t.Context(), r, c)
	if err != nil || ref != posted {
		t.Fatalf("Update: %+v, %v; want the posted card %+v", ref, err, posted)
	}
	m := e.slack.Messages("C0APPROVALS")
	if len(m) != 1 || len(buttonIDs(m[0])) != 0 || !strings.Contains(string(m[0].BlocksJSON), "Denied") {
		t.Errorf("cards %+v; want the one card, updated in place as denied", m)
	}
}

// buttonIDs are the action_ids of a message's buttons.
func buttonIDs(m slackfake.Message) []string {
	var ids []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["type"] == "button" {
				ids = append(ids, v["action_id"].(string))
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	var blocks any
	_ = json.Unmarshal(m.BlocksJSON, &blocks)
	walk(blocks)
	return ids
}

// A card names who is authenticated: an API request's card and its "Why"
// line name the API key that opened it; the requester the client named
// is shown as the client's claim beside the key, never as who asked.
func TestCardNamesTheAPIKey(t *testing.T) {
	e := newOpenEnv(t)
	for i, tt := range []struct {
		origin         approval.Origin
		want, wantNone []string
	}{
		{approval.Origin{Client: "bench", Name: "carol"},
			[]string{"Requested for `carol`, says `bench` (API)", "Why: the API client `bench` asked for it."},
			[]string{"Requested by `carol`", "client `carol`"}},
		{approval.Origin{Client: "bench"},
			[]string{"Requested by `bench` (API)", "Why: the API client `bench` asked for it."}, []string{"says"}},
		{approval.Origin{Client: "bench", Name: "bench"},
			[]string{"Requested by `bench` (API)", "Why: the API client `bench` asked for it."}, []string{"says"}},
	} {
		token := agentrunner.NewToken()
		id := "d" + string(rune('1'+i))
		if _, err := e.svc.Open(t.Context(), approval.Opening{Token: token, Origin: tt.origin,
			Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call(id, "deploy_site", `{"env":"prod"}`)}},
		}); err != nil {
			t.Fatal(err)
		}
		msgs := e.slack.Messages("C0GENERAL")
		if len(msgs) != i+1 {
			t.Fatalf("%+v: %d cards, want %d", tt.origin, len(msgs), i+1)
		}
		card := string(msgs[i].BlocksJSON)
		for _, want := range tt.want {
			if !strings.Contains(card, want) {
				t.Errorf("%+v: the card does not say %q:\n%s", tt.origin, want, card)
			}
		}
		for _, not := range tt.wantNone {
			if strings.Contains(card, not) {
				t.Errorf("%+v: the card says %q:\n%s", tt.origin, not, card)
			}
		}
	}
}
