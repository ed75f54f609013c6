package mcpgateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/approval"
)

// TestOlderProtocolClientDisconnectCancels: a client of a protocol
// revision before 2026-07-28 (the TypeScript SDK's, so Claude Code's,
// Cursor's, VS Code's) that goes away while its call waits cancels the
// request, and the card says so, as a 2026-07-28 client's does: the SDK
// ties the call to its HTTP request only from that revision on.
func TestOlderProtocolClientDisconnectCancels(t *testing.T) {
	e := newEnv(t, envOptions{})
	for i, version := range []string{"2025-06-18", "2025-11-25"} {
		msg := `{"jsonrpc":"2.0","id":` + itoa(i+1) + `,"method":"tools/call","params":{"name":"tickets__create_issue","arguments":{"title":"gone ` + version + `"}}}`
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.srv.URL+"/mcp", strings.NewReader(msg))
		req.Header.Set("Authorization", "Bearer "+billingKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", version)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		token, _, _ := e.waitCard(i + 1)
		cancel() // the client goes away: its connection closes
		<-done
		deadline := time.Now().Add(5 * time.Second)
		for {
			r, err := e.svc.Get(t.Context(), token)
			if err != nil {
				t.Fatal(err)
			}
			if card := e.cards()[i].Text; r.State == approval.StateCancelled && strings.Contains(card, "Cancelled") {
				if r.EndedBy != billing {
					t.Errorf("%s: cancelled by %q; want the client, %q", version, r.EndedBy, billing)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: request %s, card %q after the client went away; want cancelled, the card saying so", version, r.State, e.cards()[i].Text)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if n := len(e.tickets.callsOf("create_issue")); n != 0 {
		t.Errorf("upstream ran %d abandoned calls", n)
	}
}
