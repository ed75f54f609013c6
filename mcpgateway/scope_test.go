package mcpgateway_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/approval"
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
