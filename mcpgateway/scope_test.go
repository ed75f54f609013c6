package mcpgateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/store"
)

// listNames returns the names of the tools the key's client is offered.
func listNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return sortedCopy(names)
}

// A key restricted to routes is offered, and may call, only the upstream
// tools its routes match: read-only ones included, which run with
// slackbot's upstream credentials and no card.
func TestRestrictedKeyReachesOnlyItsRoutesTools(t *testing.T) {
	e := newEnv(t, envOptions{})

	ops := e.client(opsKey, nil)
	if diff := cmp.Diff([]string{"approval_prompt"}, listNames(t, ops)); diff != "" {
		t.Errorf("tools offered to a key restricted to ops, which matches no upstream tool (-want +got):\n%s", diff)
	}
	res, err := ops.CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__search", Arguments: map[string]any{"query": "salaries"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), `route "writes"`) || !strings.Contains(text(res), "Nothing was run") {
		t.Errorf("read-only tool of another route: %q (isError %v); want a tool error naming the route, saying nothing ran", text(res), res.IsError)
	}
	if n := len(e.tickets.callsOf("search")); n != 0 {
		t.Errorf("upstream got %d search calls from a key whose routes do not match it; want none", n)
	}

	sup := e.client(supportKey, nil)
	want := []string{"approval_prompt", "files__write", "flaky__do", "tickets__create_issue", "tickets__search"}
	if diff := cmp.Diff(want, listNames(t, sup)); diff != "" {
		t.Errorf("tools offered to a key restricted to writes (-want +got):\n%s", diff)
	}
	res, err = sup.CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__search", Arguments: map[string]any{"query": "printer"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || text(res) != "found: printer" {
		t.Errorf("read-only tool of the key's route: %q (isError %v); want the upstream's result", text(res), res.IsError)
	}
	res, err = sup.CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__slow_close", Arguments: map[string]any{"query": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), `route "slow"`) {
		t.Errorf("tool of another route: %q; want a tool error naming the route", text(res))
	}
	if n := len(e.cards()); n != 0 {
		t.Errorf("%d cards posted; want none", n)
	}
	if got := len(e.tickets.callsOf("search")) + len(e.tickets.callsOf("slow_close")); got != 1 {
		t.Errorf("upstream got %d calls; want the one search of the key's route", got)
	}
}

// API_RATE counts read-only calls: a key at its rate is refused before
// the upstream is called. The rate is one call a second with a burst of
// two, so of ten calls made one after the other at most two plus one a
// second pass; the ten take far less than the seven seconds more would
// need.
func TestReadOnlyCallsAreRateLimited(t *testing.T) {
	e := newEnv(t, envOptions{quota: approval.Quota{Rate: 1}})
	cs := e.client(billingKey, nil)
	ok, limited := 0, 0
	for range 10 {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__search", Arguments: map[string]any{"query": "printer"}})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !res.IsError:
			ok++
		case strings.Contains(text(res), "Rate limited") && strings.Contains(text(res), "(rate)"):
			limited++
		default:
			t.Fatalf("unexpected result %q", text(res))
		}
	}
	if limited == 0 || ok < 2 {
		t.Errorf("%d calls passed and %d were rate limited; want the burst of 2 (and no more than a second's worth) to pass and the rest refused", ok, limited)
	}
	if n := len(e.tickets.callsOf("search")); n != ok {
		t.Errorf("upstream got %d search calls; want %d, the calls that passed", n, ok)
	}
}

// Every call the gateway makes upstream is in the audit stream with the
// key, the tool, the digest of the arguments (a receipt's args_sha256) and
// the outcome: read-only calls that succeed, answer with a tool error or
// fail, and an approved call with its request's token and call.
func TestUpstreamCallsAreAudited(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := e.client(billingKey, nil)
	for _, q := range []string{"printer", brokenQuery} {
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__search", Arguments: map[string]any{"query": q}}); err != nil {
			t.Fatal(err)
		}
	}
	ch := call(t.Context(), cs, &mcp.CallToolParams{Name: "tickets__create_issue", Arguments: map[string]any{"title": "Printer on fire"}})
	token, callID, _ := e.waitCard(1)
	e.decide(token, callID, approval.Decision{Action: approval.ActionApprove})
	if res := wait(t, ch); res.IsError {
		t.Fatalf("approved call: %q", text(res))
	}
	// With the server gone, a read-only call fails.
	e.ticketsH.CloseClientConnections()
	e.ticketsH.Close()
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "tickets__search", Arguments: map[string]any{"query": "x"}}); err != nil || !res.IsError {
		t.Fatalf("read-only call with the server down: %v, %v; want a tool error", res, err)
	}

	evs, err := e.store.ReadAudit(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []store.AuditEvent
	for _, ev := range evs {
		if ev.Type == store.AuditUpstreamCall {
			ev.ID, ev.At, ev.Detail = "", time.Time{}, ""
			got = append(got, ev)
		}
	}
	digest := func(args string) string {
		d, err := receipt.ArgsSHA256([]byte(args))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	up := func(args, outcome string) store.AuditEvent {
		return store.AuditEvent{Type: store.AuditUpstreamCall, Tool: "tickets__search", By: billing, Decision: outcome, Args: args, ArgsSHA256: digest(args)}
	}
	want := []store.AuditEvent{
		up(`{"query":"printer"}`, approval.UpstreamOK),
		up(`{"query":"broken"}`, approval.UpstreamToolError),
		{Type: store.AuditUpstreamCall, Token: token, CallID: callID, Tool: "tickets__create_issue", By: billing, Decision: approval.UpstreamOK,
			Args: `{"title":"Printer on fire"}`, ArgsSHA256: digest(`{"title":"Printer on fire"}`)},
		up(`{"query":"x"}`, approval.UpstreamFailed),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("upstream calls in the audit stream (-want +got):\n%s", diff)
	}
}
