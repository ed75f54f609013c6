package approval_test

import (
	"strings"
	"testing"

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
