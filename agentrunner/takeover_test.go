package agentrunner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
)

// takeoverModel behaves like a real model across processes: it calls
// close, then note once close answered, then ends the turn; the ids of
// its calls differ per instance (gen), as a real model's do when asked
// again. failAfterNote fails the request that carries note's return.
func takeoverModel(gen int, failAfterNote *atomic.Bool) agentrunner.Model {
	return agentrunner.FunctionModel(func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		last := msgs[len(msgs)-1]
		returned := map[string]string{}
		for _, p := range last.Parts {
			if p.PartKind == agentrunner.PartToolReturn {
				returned[p.ToolName] = p.ReturnText()
			}
		}
		switch {
		case len(msgs) == 1:
			return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.ToolCall("close", json.RawMessage(`{"customer_id":"c1"}`), fmt.Sprintf("close-%d", gen))}}, nil
		case returned["note"] != "":
			if failAfterNote != nil && failAfterNote.Load() {
				return agentrunner.Message{}, errors.New("the process died")
			}
			return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("done: " + returned["note"])}}, nil
		case returned["close"] != "":
			return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.ToolCall("note", json.RawMessage(`{"customer_id":"c1"}`), fmt.Sprintf("note-%d", gen))}}, nil
		}
		return agentrunner.Message{}, fmt.Errorf("unexpected history of %d messages", len(msgs))
	})
}

// TestJournalTakeOverRunsNoToolTwice: a run resumed on "A" runs its
// approved tool (or is denied it), then a tool that needs no approval,
// and A "dies" while that tool runs or after it returned; "B", whose
// model gives other call ids, resumes the same run from the same saved
// state with the same journal. No tool runs twice: B goes on from A's
// checkpoint, reuses the returns A recorded, and tells the model of a
// lost one.
func TestJournalTakeOverRunsNoToolTwice(t *testing.T) {
	for _, tc := range []struct {
		name      string
		approve   bool
		crashIn   string // "note": while note runs; "model": after note returned
		wantClose int32
		wantOut   string
	}{
		{"approved, dies while the unapproved tool runs", true, "note", 1, agentrunner.OutcomeLostText},
		{"approved, dies after the unapproved tool returned", true, "model", 1, "noted c1"},
		{"denied, dies while the unapproved tool runs", false, "note", 0, agentrunner.OutcomeLostText},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var closes, notes atomic.Int32
			var crash atomic.Bool
			crashCtx, die := context.WithCancel(t.Context())
			closeTool := agentrunner.NewTool("close", "Close an account.", func(_ context.Context, _ *agentrunner.ToolContext, a customerArgs) (any, error) {
				closes.Add(1)
				return "closed " + a.CustomerID, nil
			}, agentrunner.RequiresApproval())
			note := agentrunner.NewTool("note", "Take a note.", func(ctx context.Context, _ *agentrunner.ToolContext, a customerArgs) (any, error) {
				notes.Add(1)
				if crash.Load() && tc.crashIn == "note" {
					die()
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return "noted " + a.CustomerID, nil
			})
			tools := []*agentrunner.Tool{closeTool, note}
			j := newMemJournal()
			failAfterNote := &atomic.Bool{}
			a := newRunner(t, takeoverModel(1, failAfterNote), tools, agentrunner.WithJournal(j))
			first, err := a.Run(t.Context(), agentrunner.RunInput{RunID: "run-1", Prompt: "go", AllowPending: true})
			if err != nil || first.Status != agentrunner.StatusPending {
				t.Fatalf("first run: %v, %+v", err, first)
			}
			answer := agentrunner.Approve()
			if !tc.approve {
				answer = agentrunner.Deny("no")
			}
			in := agentrunner.RunInput{RunID: "run-1", History: first.Messages, Pending: first.Pending,
				Results: results(map[string]agentrunner.ApprovalResult{"close-1": answer}, nil)}

			crash.Store(true)
			failAfterNote.Store(tc.crashIn == "model")
			if _, err := a.Run(crashCtx, in); err == nil {
				t.Fatal("the run on A finished; want it cut short")
			}
			crash.Store(false)
			if closes.Load() != tc.wantClose || notes.Load() != 1 {
				t.Fatalf("on A: close ran %d times, note %d; want %d and 1", closes.Load(), notes.Load(), tc.wantClose)
			}

			b := newRunner(t, takeoverModel(2, nil), tools, agentrunner.WithJournal(j))
			res, err := b.Run(t.Context(), in)
			if err != nil || res.Status != agentrunner.StatusComplete {
				t.Fatalf("the run on B: %v, %+v", err, res)
			}
			if closes.Load() != tc.wantClose || notes.Load() != 1 {
				t.Errorf("after B: close ran %d times, note %d; want %d and 1: no tool runs twice", closes.Load(), notes.Load(), tc.wantClose)
			}
			if !strings.Contains(res.Output, tc.wantOut) {
				t.Errorf("B's answer %q; want it to contain %q", res.Output, tc.wantOut)
			}
			if p := toolReturn(res.Messages, "note-2"); p.ToolCallID != "" {
				t.Errorf("B's history has its own note call's return %+v; want A's call", p)
			}
			if got := res.Applied.Approvals["close-1"]; got.Approved != tc.approve {
				t.Errorf("B's applied answers: %+v; want the decision on close-1", res.Applied)
			}
		})
	}
}
