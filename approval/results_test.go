package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/receipt"
)

// Every wire form a record holds — what this version writes and the
// shorter forms Pydantic AI and older writers use (true, false, a denial
// without a message) — decodes to the typed decision, and the results
// built from it are the wire form's canonical encoding, byte for byte.
func TestDecodeResult(t *testing.T) {
	for _, tt := range []struct {
		name, wire string
		kind       agentrunner.CallKind
		status     approval.CallStatus
		want       approval.Call // Action, Reason, OverrideArgs, Answer
		wantWire   string
	}{
		{"approved", `true`, agentrunner.KindApproval, approval.CallApproved,
			approval.Call{Action: approval.ActionApprove}, `true`},
		{"approved, tagged", `{"kind":"tool-approved"}`, agentrunner.KindApproval, approval.CallApproved,
			approval.Call{Action: approval.ActionApprove}, `true`},
		{"edited", `{"override_args":{"path":"safe.txt"},"kind":"tool-approved"}`, agentrunner.KindApproval, approval.CallApproved,
			approval.Call{Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"path":"safe.txt"}`)}, `{"override_args":{"path":"safe.txt"},"kind":"tool-approved"}`},
		{"denied", `{"message":"Not on Fridays.","kind":"tool-denied"}`, agentrunner.KindApproval, approval.CallDenied,
			approval.Call{Action: approval.ActionDeny, Reason: "Not on Fridays."}, `{"message":"Not on Fridays.","kind":"tool-denied"}`},
		{"denied, old form", `false`, agentrunner.KindApproval, approval.CallDenied,
			approval.Call{Action: approval.ActionDeny, Reason: agentrunner.DefaultDenialMessage}, `{"message":"` + agentrunner.DefaultDenialMessage + `","kind":"tool-denied"}`},
		{"denied without a message", `{"kind":"tool-denied"}`, agentrunner.KindApproval, approval.CallDenied,
			approval.Call{Action: approval.ActionDeny, Reason: agentrunner.DefaultDenialMessage}, `{"message":"` + agentrunner.DefaultDenialMessage + `","kind":"tool-denied"}`},
		{"answered", `{"color":"blue"}`, agentrunner.KindQuestion, approval.CallAnswered,
			approval.Call{Action: approval.ActionAnswer, Answer: json.RawMessage(`{"color":"blue"}`)}, `{"color":"blue"}`},
		{"answered null", `null`, agentrunner.KindExternal, approval.CallAnswered,
			approval.Call{Action: approval.ActionAnswer, Answer: json.RawMessage(`null`)}, `null`},
		{"failed", `{"message":"the warehouse is down","kind":"tool-failed"}`, agentrunner.KindExternal, approval.CallFailed,
			approval.Call{Action: approval.ActionFail, Reason: "the warehouse is down"}, `{"message":"the warehouse is down","kind":"tool-failed"}`},
		{"failed without a message", `{"kind":"tool-failed"}`, agentrunner.KindExternal, approval.CallFailed,
			approval.Call{Action: approval.ActionFail}, `{"message":"","kind":"tool-failed"}`},
		{"retry", `{"message":"try later","kind":"model-retry"}`, agentrunner.KindExternal, approval.CallFailed,
			approval.Call{Action: approval.ActionRetry, Reason: "try later"}, `{"message":"try later","kind":"model-retry"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := approval.Call{ID: "c1", Kind: tt.kind, Status: tt.status, DecidedBy: "U0ALICE"}
			if err := c.DecodeResult([]byte(tt.wire)); err != nil {
				t.Fatal(err)
			}
			got := approval.Call{Action: c.Action, Reason: c.Reason, OverrideArgs: c.OverrideArgs, Answer: c.Answer}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
			if !c.Decided() {
				t.Errorf("Decided() = false for a call with a decision")
			}
			r := &approval.Request{Token: "tok", State: approval.StateResolved, Calls: []approval.Call{c}}
			res, err := json.Marshal(r.Results(nil))
			if err != nil {
				t.Fatal(err)
			}
			var m struct{ Approvals, Calls map[string]json.RawMessage }
			if err := json.Unmarshal(res, &m); err != nil {
				t.Fatal(err)
			}
			wire := m.Approvals["c1"]
			if tt.kind != agentrunner.KindApproval {
				wire = m.Calls["c1"]
			}
			if string(wire) != tt.wantWire {
				t.Errorf("handed out as %s, want %s", wire, tt.wantWire)
			}
		})
	}
	for _, bad := range []struct {
		kind agentrunner.CallKind
		wire string
	}{{agentrunner.KindApproval, `{"kind":"tool-maybe"}`}, {agentrunner.KindApproval, `1`}, {agentrunner.KindExternal, `{"kind":"tool-failed","message":5}`}, {agentrunner.KindQuestion, `{`}} {
		c := approval.Call{ID: "c1", Kind: bad.kind}
		if err := c.DecodeResult([]byte(bad.wire)); err == nil {
			t.Errorf("DecodeResult(%s) of a %s: no error", bad.wire, bad.kind)
		}
	}
}

// A call failed by a decision is decided; one failed because its request
// failed around it is not, and its Reason is the request's.
func TestDecidedFailure(t *testing.T) {
	failed := approval.Call{Kind: agentrunner.KindExternal, Status: approval.CallFailed}
	if err := failed.DecodeResult([]byte(`{"message":"no","kind":"tool-failed"}`)); err != nil || !failed.Decided() {
		t.Errorf("a failure decided: Decided() = %v, %v", failed.Decided(), err)
	}
	around := approval.Call{Kind: agentrunner.KindExternal, Status: approval.CallFailed, Reason: "asking failed"}
	if around.Decided() || around.Reason != "asking failed" {
		t.Errorf("a call its request's failure ended: Decided() = %v, Reason %q", around.Decided(), around.Reason)
	}
}

// Results are built and signed when they are handed out: the record
// holds no receipt, every hand-out carries a receipt that verifies, a
// receipt given in a decision's metadata is replaced by slackbot's, and
// changing the results handed out changes nothing in the record.
func TestResultsSignedAtHandOut(t *testing.T) {
	signer, keys := receiptKeys(t)
	at := time.Unix(1_800_000_000, 0)
	r, _ := resolvedRequest(approval.Origin{User: "U0CAROL"}, at, approval.Call{ID: "c1", DecidedBy: "U0ALICE", DecidedAt: at, Route: "files"})
	r.Calls[0].Metadata = map[string]any{receipt.MetadataKey: "forged", "note": "kept"}

	if res := r.Results(nil); receipt.FromMetadata(res.Metadata["c1"]) != "" || res.Metadata["c1"]["note"] != "kept" {
		t.Errorf("results without a signer: metadata %v, want the note and no receipt", res.Metadata["c1"])
	}
	verify := func(res *agentrunner.DeferredToolResults) {
		t.Helper()
		c, err := keys.Verify(receipt.FromMetadata(res.Metadata["c1"]), receipt.Expect{
			CallID: "c1", Tool: "delete_file", Args: json.RawMessage(`{"path":"c1"}`), Token: r.Token, Now: at,
		})
		if err != nil {
			t.Fatalf("receipt: %v", err)
		}
		if !cmp.Equal(c.By, []string{"U0ALICE"}) || c.Route != "files" {
			t.Errorf("claims %+v, want by U0ALICE on files", c)
		}
		if res.Metadata["c1"]["note"] != "kept" || res.AnsweredBy["c1"] != "U0ALICE" || !res.Approvals["c1"].Approved {
			t.Errorf("results %+v, want c1 approved by U0ALICE with its note", res)
		}
	}
	first := r.Results(signer)
	verify(first)
	first.Metadata["c1"]["note"] = "changed"
	delete(first.Metadata["c1"], receipt.MetadataKey)
	verify(r.Results(signer)) // a repeat hand-out, unaffected by the first's change
	if want := map[string]any{receipt.MetadataKey: "forged", "note": "kept"}; !cmp.Equal(r.Calls[0].Metadata, want) {
		t.Errorf("the record's metadata = %v after hand-outs, want it unchanged %v", r.Calls[0].Metadata, want)
	}
}

// What a request hands out by state: nothing while pending, "no decision"
// for every call once it expired, and what it was resolved with as given
// when no call was recorded (a receipt in it is taken out: only
// slackbot's signature makes one).
func TestResultsByState(t *testing.T) {
	signer, _ := receiptKeys(t)
	reqs := agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{{ToolName: "delete_file", ToolCallID: "c1", Args: json.RawMessage(`{}`)}}}
	pending := &approval.Request{State: approval.StatePending, Requests: reqs, Calls: []approval.Call{{ID: "c1", Kind: agentrunner.KindApproval, Status: approval.CallPending}}}
	if res := pending.Results(signer); res != nil {
		t.Errorf("a pending request hands out %+v, want nil", res)
	}
	expired := &approval.Request{State: approval.StateExpired, Requests: reqs, Calls: []approval.Call{{ID: "c1", Kind: agentrunner.KindApproval, Status: approval.CallExpired}}}
	if diff := cmp.Diff(agentrunner.NoDecision(reqs, agentrunner.ReasonExpired), expired.Results(signer)); diff != "" {
		t.Errorf("an expired request's results (-want +got):\n%s", diff)
	}
	given := agentrunner.NewDeferredToolResults()
	given.Approvals["c1"] = agentrunner.Approve()
	given.Metadata["c1"] = map[string]any{receipt.MetadataKey: "forged", "note": "kept"}
	resolved := &approval.Request{State: approval.StateResolved, Given: given}
	res := resolved.Results(signer)
	if !res.Approvals["c1"].Approved || !cmp.Equal(res.Metadata["c1"], map[string]any{"note": "kept"}) {
		t.Errorf("results given whole: %+v, want c1 approved with the note only", res)
	}
	if given.Metadata["c1"][receipt.MetadataKey] != "forged" {
		t.Errorf("handing out changed Given: %v", given.Metadata["c1"])
	}
}

// tokenStore is a TokenStore whose waits end with one request.
type tokenStore struct {
	approval.TokenStore
	r   *approval.Request
	err error
}

func (s tokenStore) WaitEnded(context.Context, string) (*approval.Request, error) { return s.r, s.err }

// A run woken in place gets the results as every door hands them out,
// receipts included; an expired request is its NoDecisionError, and the
// store's error passes through.
func TestRunTokensWait(t *testing.T) {
	signer, keys := receiptKeys(t)
	at := time.Unix(1_800_000_000, 0)
	r, _ := resolvedRequest(approval.Origin{User: "U0CAROL"}, at, approval.Call{ID: "c1", DecidedBy: "U0ALICE", DecidedAt: at})
	res, err := approval.RunTokens{TokenStore: tokenStore{r: r}, Signer: signer}.Wait(t.Context(), r.Token)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Verify(receipt.FromMetadata(res.Metadata["c1"]), receipt.Expect{CallID: "c1", Tool: "delete_file", Args: json.RawMessage(`{"path":"c1"}`), Token: r.Token, Now: at}); err != nil {
		t.Errorf("the woken run's receipt: %v", err)
	}
	expired := &approval.Request{Token: "tok", State: approval.StateExpired}
	var nd *agentrunner.NoDecisionError
	if _, err := (approval.RunTokens{TokenStore: tokenStore{r: expired}, Signer: signer}).Wait(t.Context(), "tok"); !errors.As(err, &nd) || !errors.Is(err, agentrunner.ErrTokenExpired) {
		t.Errorf("wait on an expired request: %v, want a NoDecisionError for expiry", err)
	}
	if _, err := (approval.RunTokens{TokenStore: tokenStore{err: approval.ErrNotFound}}).Wait(t.Context(), "tok"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("wait on a gone request: %v, want ENOTFOUND", err)
	}
}
