package mcptools_test

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

// callLog records what a Toolset's call observer is told.
type callLog struct {
	mu    sync.Mutex
	calls []string
}

func (l *callLog) observe(server string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	result := "ok"
	if err != nil {
		result = "error"
	}
	l.calls = append(l.calls, server+" "+result)
}

func (l *callLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// TestCallObserver: WithCallObserver is told of every tools/call once,
// by server, from both doors (a runner's tool and the gateway's CallTool):
// a result flagged isError is the server answering (ok), a call to a
// server that is down an error, a tool no server offers nothing.
func TestCallObserver(t *testing.T) {
	srv := newTicketServer()
	var log callLog
	ts := newToolset(t, []mcptools.Config{{Name: "tickets"}}, byServer(map[string]*ticketServer{"tickets": srv}), mcptools.WithCallObserver(log.observe))

	if _, err := ts.CallTool(t.Context(), "tickets__close_ticket", json.RawMessage(`{"id":7}`), nil); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if res, err := ts.CallTool(t.Context(), "tickets__lock_ticket", json.RawMessage(`{"id":7}`), nil); err != nil || !res.IsError {
		t.Fatalf("CallTool of a failing tool: %+v, %v; want its isError result", res, err)
	}
	if _, err := ts.CallTool(t.Context(), "tickets__nope", json.RawMessage(`{}`), nil); err == nil {
		t.Fatal("CallTool of an unknown tool: no error")
	}
	search := findTool(t, ts.Tools(), "tickets__search_tickets")
	if _, err := callTool(t, search, `{"query":"x"}`); err != nil {
		t.Fatalf("search_tickets: %v", err)
	}
	lock := findTool(t, ts.Tools(), "tickets__lock_ticket")
	if _, err := callTool(t, lock, `{"id":7}`); err == nil {
		t.Fatal("lock_ticket through a runner: no error; want the tool's")
	}
	want := []string{"tickets ok", "tickets ok", "tickets ok", "tickets ok"}
	if got := log.got(); !slices.Equal(got, want) {
		t.Fatalf("observed %v; want %v", got, want)
	}

	srv.stop()
	if _, err := ts.CallTool(t.Context(), "tickets__close_ticket", json.RawMessage(`{"id":7}`), nil); err == nil {
		t.Fatal("CallTool of a stopped server: no error")
	}
	if _, err := callTool(t, search, `{"query":"x"}`); err == nil {
		t.Fatal("search_tickets of a stopped server: no error")
	}
	want = append(want, "tickets error", "tickets error")
	if got := log.got(); !slices.Equal(got, want) {
		t.Errorf("observed %v; want %v", got, want)
	}
}
