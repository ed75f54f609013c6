package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/store"
)

// receiptStore is a store, the signer of the receipts its results are
// handed out with (approval.Request.Results), and the keys to verify
// them.
func receiptStore(t *testing.T, e *env) (*store.Store, approval.Signer, *receipt.KeySet) {
	t.Helper()
	k, err := receipt.NewKey([]byte(strings.Repeat("r", receipt.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	signer, err := receipt.NewSigner(k, "https://slackbot.test", 0)
	if err != nil {
		t.Fatal(err)
	}
	return store.New(e.rdb, e.opts), signer, receipt.NewKeySet(k)
}

// Every approved call in the results the store reads carries a receipt
// for exactly the call, the arguments that run, its approvers, its route
// and its token; denied calls carry none, and no receipt given with a
// decision survives.
func TestResultsCarryReceipts(t *testing.T) {
	e := newEnv(t)
	s, signer, keys := receiptStore(t, e)
	reqs := requests("plain", "edited", "denied", "policy", "big")
	reqs.Approvals[4].Args = json.RawMessage(`{"path":"x","id":12345678901234567891}`)
	a := e.create(t, s, reqs, 1)
	forged := map[string]any{receipt.MetadataKey: "forged", "note": "kept"}
	for _, d := range []approval.Decision{
		{CallID: "plain", By: "UA", Action: approval.ActionApprove, Metadata: forged},
		{CallID: "edited", By: "UB", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`"{\"path\": \"safe.txt\"}"`)},
		{CallID: "denied", By: "UC", Action: approval.ActionDeny, Metadata: forged},
		{CallID: "policy", By: approval.ByPolicyPrefix + "files", Action: approval.ActionApprove},
		{CallID: "big", By: "UA", Action: approval.ActionApprove},
	} {
		if _, err := s.Decide(t.Context(), a.Token, d); err != nil {
			t.Fatalf("decide %s: %v", d.CallID, err)
		}
	}
	got, err := s.Get(t.Context(), a.Token)
	if err != nil {
		t.Fatal(err)
	}
	md := got.Results(signer).Metadata
	verify := func(id, args string) *receipt.Claims {
		t.Helper()
		c, err := keys.Verify(receipt.FromMetadata(md[id]), receipt.Expect{
			CallID: id, Tool: "delete_file", Args: json.RawMessage(args), Token: a.Token, Issuer: "https://slackbot.test", Now: e.clock.Now(),
		})
		if err != nil {
			t.Fatalf("receipt of %s: %v", id, err)
		}
		return c
	}
	plain := verify("plain", `{"path":"plain.txt"}`)
	if want := (receipt.Claims{
		Issuer: "https://slackbot.test", CallID: "plain", Tool: "delete_file", ArgsSHA256: plain.ArgsSHA256, By: []string{"UA"}, Route: "files",
		TokenSHA256: receipt.TokenSHA256(a.Token), IssuedAt: got.Call("plain").DecidedAt.Unix(), ExpiresAt: got.Call("plain").DecidedAt.Add(receipt.DefaultTTL).Unix(),
	}); !cmp.Equal(*plain, want) {
		t.Errorf("claims of plain: %s", cmp.Diff(want, *plain))
	}
	if md["plain"]["note"] != "kept" || receipt.FromMetadata(md["plain"]) == "forged" {
		t.Errorf("metadata of plain = %v, want the decision's note and slackbot's receipt", md["plain"])
	}
	verify("edited", `{"path":"safe.txt"}`)
	if _, err := keys.Verify(receipt.FromMetadata(md["edited"]), receipt.Expect{CallID: "edited", Tool: "delete_file", Args: json.RawMessage(`{"path":"edited.txt"}`), Now: e.clock.Now()}); !errors.Is(err, receipt.ErrMismatch) {
		t.Errorf("the edited call's receipt with the original arguments: %v, want ErrMismatch", err)
	}
	if c := verify("policy", `{"path":"policy.txt"}`); !cmp.Equal(c.By, []string{"policy:files"}) {
		t.Errorf("policy receipt by %v", c.By)
	}
	if _, ok := md["denied"][receipt.MetadataKey]; ok {
		t.Errorf("a denied call has a receipt: %v", md["denied"])
	}
	if md["big"][receipt.MetadataKey] != nil || !strings.Contains(md["big"][receipt.ErrorMetadataKey].(string), "2^53") {
		t.Errorf("metadata of a call no receipt can bind: %v, want %s saying why", md["big"], receipt.ErrorMetadataKey)
	}
	// Reading again gives the same receipts.
	again, err := s.Get(t.Context(), a.Token)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(md, again.Results(signer).Metadata); diff != "" {
		t.Errorf("a second read signed differently: %s", diff)
	}
}

// A quorum's receipt names every approver of the approved arguments.
func TestQuorumReceipt(t *testing.T) {
	e := newEnv(t)
	s, signer, keys := receiptStore(t, e)
	a := e.create(t, s, requests("c1"), 2)
	for _, by := range []string{"UA", "UB"} {
		e.clock.Advance(time.Second)
		if _, err := s.Decide(t.Context(), a.Token, approve("c1", by)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get(t.Context(), a.Token)
	if err != nil {
		t.Fatal(err)
	}
	c, err := keys.Verify(receipt.FromMetadata(got.Results(signer).Metadata["c1"]), receipt.Expect{CallID: "c1", Tool: "delete_file", Args: json.RawMessage(`{"path":"c1.txt"}`), Now: e.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(c.By, []string{"UA", "UB"}) {
		t.Errorf("by = %v, want [UA UB]", c.By)
	}
}

// An API client's answer approving its own call has no receipt: its
// metadata says why instead; answered_by still names the client.
func TestAnswerReceipt(t *testing.T) {
	e := newEnv(t)
	s, signer, _ := receiptStore(t, e)
	a := e.create(t, s, requests("c1"), 1)
	res := agentrunner.NewDeferredToolResults()
	res.Approvals["c1"] = agentrunner.Approve()
	got, err := s.Answer(t.Context(), a.Token, "U0ALICE", res)
	if err != nil {
		t.Fatal(err)
	}
	md := got.Results(signer).Metadata["c1"]
	if receipt.FromMetadata(md) != "" || !strings.Contains(fmt.Sprint(md[receipt.ErrorMetadataKey]), approval.ErrClientApproval.Error()) {
		t.Errorf("metadata of a client's own approval = %v, want no receipt and why", md)
	}
	if !got.Call("c1").ByClient || got.Results(signer).AnsweredBy["c1"] != "U0ALICE" {
		t.Errorf("ByClient %v, answered_by %q; want true and the client's name", got.Call("c1").ByClient, got.Results(signer).AnsweredBy["c1"])
	}
}
