package approval_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/receipt"
)

// A policy's approval inside a run carries a receipt by policy:<route>,
// and a runner that verifies receipts runs it; without a signer the same
// runner refuses it, so the verification is what lets it run.
func TestPolicyReceipt(t *testing.T) {
	rs := parseRoutes(t, `
routes:
  - name: refunds
    when: {tools: ["issue_refund"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_approve: "args.amount <= 100"
`)
	k, err := receipt.NewKey([]byte(strings.Repeat("p", receipt.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := receipt.NewSigner(k, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		signer  approval.Signer
		ran     []float64
		wantOut string
	}{
		{"signed", signer, []float64{40}, "small=refunded"},
		{"unsigned", nil, nil, "small=" + agentrunner.UnverifiedPrefix + receipt.ErrMissing.Error() + "."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			shop := &refundShop{}
			pol := &approval.Policy{Routes: rs, Signer: tt.signer}
			r, err := agentrunner.NewRunner(callsOnce(refundCall("small", 40)), shop.tools(),
				agentrunner.WithHandlers(pol), agentrunner.WithReceiptKeys(receipt.NewKeySet(k)))
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "refund", Deps: &approval.Origin{Channel: "C0SUPPORT", User: "U0CAROL"}})
			if err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(shop.refunded, tt.ran) || res.Output != tt.wantOut {
				t.Errorf("ran %v, output %q; want %v, %q", shop.refunded, res.Output, tt.ran, tt.wantOut)
			}
		})
	}
	// The receipt names the policy and the route, and no request.
	res, err := (&approval.Policy{Routes: rs, Signer: signer}).HandleDeferred(t.Context(), &agentrunner.RunContext{Deps: &approval.Origin{Channel: "C0SUPPORT"}},
		agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{{ToolName: "issue_refund", Args: []byte(`{"order_id":"o","amount":5}`), ToolCallID: "c1"}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := receipt.NewKeySet(k).Verify(receipt.FromMetadata(res.Metadata["c1"]), receipt.Expect{CallID: "c1", Tool: "issue_refund", Args: []byte(`{"amount":5,"order_id":"o"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(c.By, []string{"policy:refunds"}) || c.Route != "refunds" || c.TokenSHA256 != "" {
		t.Errorf("claims = %+v", c)
	}
}

// receiptKeys is a signer and the key set that verifies its receipts.
func receiptKeys(t *testing.T) (*receipt.Signer, *receipt.KeySet) {
	t.Helper()
	k, err := receipt.NewKey([]byte(strings.Repeat("q", receipt.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := receipt.NewSigner(k, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return signer, receipt.NewKeySet(k)
}

// resolvedRequest is a resolved request of origin whose calls (one
// delete_file call per id, {"path":"<id>"}) were approved as given.
func resolvedRequest(origin approval.Origin, ended time.Time, calls ...approval.Call) (*approval.Request, *agentrunner.DeferredToolResults) {
	r := &approval.Request{Token: "tok-" + calls[0].ID, Origin: origin, State: approval.StateResolved, EndedAt: ended}
	res := agentrunner.NewDeferredToolResults()
	for _, c := range calls {
		r.Requests.Approvals = append(r.Requests.Approvals, agentrunner.ToolCallPart{ToolName: "delete_file", Args: json.RawMessage(`{"path":"` + c.ID + `"}`), ToolCallID: c.ID})
		c.Kind, c.Status, c.Action = agentrunner.KindApproval, approval.CallApproved, approval.ActionApprove
		if c.Required == 0 {
			c.Required = 1
		}
		r.Calls = append(r.Calls, c)
		res.Approvals[c.ID] = agentrunner.Approve()
	}
	return r, res
}

// An API client answering its own request is not an approver: a call it
// approved — alone, or completing a quorum people had begun — has no
// receipt, and slackbot_receipt_error says why (the key may be named like
// a Slack user id, and the agent's process may hold it). A person deciding
// a client's request gets a receipt as anywhere.
func TestNoReceiptForAClientsOwnApproval(t *testing.T) {
	signer, keys := receiptKeys(t)
	at := time.Unix(1_800_000_000, 0)
	client := approval.Origin{Client: "U0MALLORY"}
	r, res := resolvedRequest(client, at,
		approval.Call{ID: "alone", DecidedBy: "U0MALLORY", DecidedAt: at, ByClient: true},
		approval.Call{ID: "quorum", Required: 2, DecidedBy: "U0MALLORY", DecidedAt: at, ByClient: true, ApprovedKey: "-", Votes: []approval.Vote{{By: "U0ALICE", At: at, Key: "-"}}},
	)
	approval.AddReceipts(r, res, signer)
	for _, id := range []string{"alone", "quorum"} {
		if jws := receipt.FromMetadata(res.Metadata[id]); jws != "" {
			t.Errorf("%s: a client's approval of its own call has a receipt", id)
		}
		if why, _ := res.Metadata[id][receipt.ErrorMetadataKey].(string); !strings.Contains(why, approval.ErrClientApproval.Error()) {
			t.Errorf("%s: %s = %q, want it to say why", id, receipt.ErrorMetadataKey, why)
		}
	}
	r, res = resolvedRequest(client, at, approval.Call{ID: "person", DecidedBy: "U0ALICE", DecidedAt: at})
	approval.AddReceipts(r, res, signer)
	c, err := keys.Verify(receipt.FromMetadata(res.Metadata["person"]), receipt.Expect{CallID: "person", Tool: "delete_file", Args: json.RawMessage(`{"path":"person"}`), Now: at})
	if err != nil || !cmp.Equal(c.By, []string{"U0ALICE"}) {
		t.Errorf("a person's approval of a client's request: %+v, %v; want by [U0ALICE]", c, err)
	}
}

// A call approved early in a request whose other calls were decided more
// than a receipt's TTL later still runs when the request resolves: its
// receipt holds from when the request resolved (the call could not run
// before), not from its own decision.
func TestReceiptHoldsFromResolution(t *testing.T) {
	signer, keys := receiptKeys(t)
	early := time.Unix(1_800_000_000, 0)
	resolved := early.Add(receipt.DefaultTTL + time.Hour)
	r, res := resolvedRequest(approval.Origin{Channel: "C0SUPPORT", User: "U0CAROL"}, resolved,
		approval.Call{ID: "early", DecidedBy: "U0ALICE", DecidedAt: early},
		approval.Call{ID: "late", DecidedBy: "U0BOB", DecidedAt: resolved},
	)
	approval.AddReceipts(r, res, signer)
	for _, id := range []string{"early", "late"} {
		c, err := keys.Verify(receipt.FromMetadata(res.Metadata[id]), receipt.Expect{CallID: id, Tool: "delete_file", Args: json.RawMessage(`{"path":"` + id + `"}`), Now: resolved.Add(time.Minute)})
		if err != nil {
			t.Fatalf("%s, read as the request resolved: %v", id, err)
		}
		if c.IssuedAt != resolved.Unix() || c.ExpiresAt != resolved.Add(receipt.DefaultTTL).Unix() {
			t.Errorf("%s: iat %d exp %d, want %d and %d", id, c.IssuedAt, c.ExpiresAt, resolved.Unix(), resolved.Add(receipt.DefaultTTL).Unix())
		}
	}
}

// Results built without a metadata map (a literal, a decoder that leaves
// it nil) get their receipts all the same, rather than a panic.
func TestAddReceiptsWithoutMetadata(t *testing.T) {
	signer, keys := receiptKeys(t)
	at := time.Unix(1_800_000_000, 0)
	r, _ := resolvedRequest(approval.Origin{User: "U0CAROL"}, at, approval.Call{ID: "c1", DecidedBy: "U0ALICE", DecidedAt: at})
	res := &agentrunner.DeferredToolResults{Approvals: map[string]agentrunner.ApprovalResult{"c1": agentrunner.Approve()}}
	approval.AddReceipts(r, res, signer)
	if _, err := keys.Verify(receipt.FromMetadata(res.Metadata["c1"]), receipt.Expect{CallID: "c1", Tool: "delete_file", Args: json.RawMessage(`{"path":"c1"}`), Now: at}); err != nil {
		t.Errorf("receipt: %v", err)
	}
}

// A call a policy approves waits, in place, for the person deciding
// another call of the same round (AskHandler: a run whose earlier handlers
// decided calls does not suspend); when that takes longer than a
// receipt's TTL (routes may wait days), the policy's approval must still
// run.
func TestPolicyReceiptOutlivesTheRound(t *testing.T) {
	t.Skip("issue15-review: design: the policy signs when it decides (iat = then, exp = +24h) but the runner applies the round's decisions only after every handler returned, so a sibling call a person decides more than 24h later makes the policy's receipt expire before its call runs; fix: sign policy receipts when the round is applied (a runner hook that re-signs, or agentrunner asking the policy's Signer in apply), or have AskHandler suspend and the policy decide again on resume")
	rs := parseRoutes(t, `
routes:
  - name: refunds
    when: {tools: ["issue_refund"]}
    channel: C0APPROVALS
    approvers: {users: [U0ALICE]}
    auto_approve: "args.amount <= 100"
`)
	signer, keys := receiptKeys(t)
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	person := agentrunner.HandlerFunc(func(_ context.Context, _ *agentrunner.RunContext, req agentrunner.DeferredToolRequests) (*agentrunner.DeferredToolResults, error) {
		now = now.Add(receipt.DefaultTTL + time.Hour) // the approver takes a day and an hour
		res := agentrunner.NewDeferredToolResults()
		for _, c := range req.Approvals {
			res.Approvals[c.ToolCallID] = agentrunner.Deny("too much")
		}
		return res, nil
	})
	shop := &refundShop{}
	r, err := agentrunner.NewRunner(callsOnce(refundCall("small", 40), refundCall("large", 500)), shop.tools(),
		agentrunner.WithHandlers(&approval.Policy{Routes: rs, Now: clock, Signer: signer}, person),
		agentrunner.WithReceiptKeys(keys), agentrunner.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "refund", Deps: &approval.Origin{Channel: "C0SUPPORT", User: "U0CAROL"}})
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(shop.refunded, []float64{40}) {
		t.Errorf("refunded %v, want [40]; the model saw %q", shop.refunded, res.Output)
	}
}
