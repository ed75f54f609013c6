package agentrunner_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/receipt"
)

func receiptKey(t *testing.T, seed string) *receipt.Key {
	t.Helper()
	k, err := receipt.NewKey([]byte(strings.Repeat(seed, receipt.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sign returns a receipt of call id of tool with args, made by key,
// issued at at.
func sign(t *testing.T, k *receipt.Key, id, tool, args string, at time.Time) string {
	t.Helper()
	s, err := receipt.NewSigner(k, "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := receipt.ArgsSHA256([]byte(args))
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(receipt.Claims{CallID: id, Tool: tool, ArgsSHA256: digest, By: []string{"U0ALICE"}, IssuedAt: at.Unix()})
	if err != nil {
		t.Fatal(err)
	}
	return jws
}

// A runner given the receipt keys runs an approved call only when its
// receipt verifies for exactly that call and the arguments that would
// run; otherwise the tool does not run and the model hears why.
func TestReceiptsVerified(t *testing.T) {
	k, stranger := receiptKey(t, "k"), receiptKey(t, "s")
	now := time.Now()
	tests := []struct {
		name     string
		approval string // the approval's JSON; ID is replaced by the call id
		receipt  func(id, args string) string
		wantRan  int32
		wantSays string
	}{
		{"verifies", `true`, func(id, args string) string { return sign(t, k, id, "delete_customer", args, now) }, 1, "deleted"},
		{"an edit and its receipt", `{"kind":"tool-approved","override_args":{"customer_id":"zed"}}`,
			func(id, _ string) string { return sign(t, k, id, "delete_customer", `{"customer_id":"zed"}`, now) }, 1, "deleted zed"},
		{"no receipt", `true`, func(string, string) string { return "" }, 0, "no approval receipt"},
		{"an edit under the original's receipt", `{"kind":"tool-approved","override_args":{"customer_id":"zed"}}`,
			func(id, args string) string { return sign(t, k, id, "delete_customer", args, now) }, 0, "other arguments"},
		{"another call's receipt", `true`, func(_, args string) string { return sign(t, k, "call_other", "delete_customer", args, now) }, 0, "another call"},
		{"another tool's receipt", `true`, func(id, args string) string { return sign(t, k, id, "lookup", args, now) }, 0, "another call"},
		{"expired", `true`, func(id, args string) string { return sign(t, k, id, "delete_customer", args, now.Add(-2*time.Hour)) }, 0, "expired"},
		{"an unknown key", `true`, func(id, args string) string { return sign(t, stranger, id, "delete_customer", args, now) }, 0, "unknown key"},
		{"tampered", `true`, func(id, args string) string {
			jws := sign(t, k, id, "delete_customer", args, now)
			return jws[:len(jws)-4] + "AAAA"
		}, 0, "signature does not verify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			var ran atomic.Int32
			r := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{deleteCustomerTool(&ran)},
				agentrunner.WithReceiptKeys(receipt.NewKeySet(k)))
			first, err := r.Run(ctx, agentrunner.RunInput{Prompt: "go", AllowPending: true})
			if err != nil {
				t.Fatal(err)
			}
			call := first.Pending.Approvals[0]
			args, _ := call.ArgsObject()
			var answer agentrunner.DeferredToolResults
			if err := json.Unmarshal([]byte(`{"approvals":{"`+call.ToolCallID+`":`+tt.approval+`}}`), &answer); err != nil {
				t.Fatal(err)
			}
			if jws := tt.receipt(call.ToolCallID, string(args)); jws != "" {
				answer.Metadata = map[string]map[string]any{call.ToolCallID: {receipt.MetadataKey: jws}}
			}
			res, err := r.Run(ctx, agentrunner.RunInput{History: first.Messages, Results: &answer, AllowPending: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := ran.Load(); got != tt.wantRan {
				t.Errorf("the tool ran %d times, want %d", got, tt.wantRan)
			}
			ret := toolReturn(res.Messages, call.ToolCallID)
			if !strings.Contains(ret.ReturnText(), tt.wantSays) {
				t.Fatalf("the model was told %+v, want %q in it", ret, tt.wantSays)
			}
			if tt.wantRan == 0 && (ret.Outcome != agentrunner.OutcomeFailed || !strings.HasPrefix(ret.ReturnText(), agentrunner.UnverifiedPrefix)) {
				t.Errorf("a refused receipt: outcome %s, text %q; want failed, %q…", ret.Outcome, ret.ReturnText(), agentrunner.UnverifiedPrefix)
			}
		})
	}
}

// Without receipt keys, an approval runs as it always did.
func TestReceiptsNotVerifiedWithoutKeys(t *testing.T) {
	var ran atomic.Int32
	r := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{deleteCustomerTool(&ran)})
	first, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go", AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	answer := results(map[string]agentrunner.ApprovalResult{first.Pending.Approvals[0].ToolCallID: agentrunner.Approve()}, nil)
	if _, err := r.Run(t.Context(), agentrunner.RunInput{History: first.Messages, Results: answer}); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 1 {
		t.Errorf("the tool ran %d times, want 1", ran.Load())
	}
}

// ranJournal is a journal in which every call already ran (a process
// that died after the tool returned, before its run's checkpoint): Begin
// returns the recorded return.
type ranJournal struct{ begun atomic.Int32 }

func (j *ranJournal) Begin(_ context.Context, _ string, c agentrunner.ToolCallPart, _ agentrunner.Checkpoint) (agentrunner.Begun, error) {
	j.begun.Add(1)
	ret := agentrunner.ToolReturn(c.ToolName, c.ToolCallID, json.RawMessage(`"deleted (recorded)"`), agentrunner.OutcomeSuccess)
	return agentrunner.Begun{Return: &ret}, nil
}

func (j *ranJournal) End(context.Context, string, agentrunner.ToolCallPart, *agentrunner.Part) error {
	return nil
}

// A call the journal says already ran is not reported to the model as
// refused ("did not run") when its receipt no longer verifies on the
// takeover (it expired meanwhile): the model hears the recorded return,
// which is what happened, and the tool does not run again.
func TestReceiptOfACallThatAlreadyRan(t *testing.T) {
	k := receiptKey(t, "k")
	var ran atomic.Int32
	j := &ranJournal{}
	r := newRunner(t, agentrunner.TestModel{}, []*agentrunner.Tool{deleteCustomerTool(&ran)},
		agentrunner.WithReceiptKeys(receipt.NewKeySet(k)), agentrunner.WithJournal(j))
	first, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "go", AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	call := first.Pending.Approvals[0]
	args, _ := call.ArgsObject()
	answer := results(map[string]agentrunner.ApprovalResult{call.ToolCallID: agentrunner.Approve()}, nil)
	answer.Metadata[call.ToolCallID] = map[string]any{receipt.MetadataKey: sign(t, k, call.ToolCallID, "delete_customer", string(args), time.Now().Add(-2*time.Hour))}
	res, err := r.Run(t.Context(), agentrunner.RunInput{History: first.Messages, Results: answer, AllowPending: true})
	if err != nil {
		t.Fatal(err)
	}
	if ret := toolReturn(res.Messages, call.ToolCallID); ret.ReturnText() != "deleted (recorded)" || ran.Load() != 0 {
		t.Errorf("the model was told %q (the tool ran %d times now); want the recorded return and no run", ret.ReturnText(), ran.Load())
	}
}
