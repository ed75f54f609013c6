package store_test

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

func linkID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// A step-up link reads back as saved, is taken by exactly one of many
// racing replicas, and is kept just past its expiry with a TTL.
func TestStepUpLinkTakenOnce(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	a := e.create(t, s, requests("c1", "c2"), 1)
	l := &approval.StepUpLink{ID: linkID(t), Team: "T0", User: "U0ALICE", Token: a.Token,
		Calls: []approval.StepUpCall{{CallID: "c1", ArgsDigest: "aa"}, {CallID: "c2", ArgsDigest: "bb"}},
		Grant: time.Hour, Batch: true, Message: approval.MessageRef{Channel: "C1", ID: "1.2"}, Methods: []string{"webauthn", "totp"},
		Expires: e.clock.Now().Add(approval.StepUpLinkTTL).UTC()}
	if err := s.SaveStepUpLink(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "saving the same id again", s.SaveStepUpLink(t.Context(), l), approval.ErrConflict)
	got, err := s.StepUpLink(t.Context(), l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(l, got); diff != "" {
		t.Errorf("link read back (-saved +read):\n%s", diff)
	}
	ttl := e.rdb.PTTL(t.Context(), e.prefix+"stepup:"+l.ID).Val()
	if ttl <= approval.StepUpLinkTTL || ttl > approval.StepUpLinkTTL+store.StepUpLinkGrace {
		t.Errorf("link TTL %v, want just past its five minutes", ttl)
	}

	var taken atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		other := e.otherProcess(t)
		wg.Go(func() {
			if got, err := other.TakeStepUpLink(t.Context(), l.ID); err == nil && got.User == "U0ALICE" {
				taken.Add(1)
			} else if approval.ErrorCode(err) != approval.ENOTFOUND {
				t.Errorf("take: %v, want not_found for all but one", err)
			}
		})
	}
	wg.Wait()
	if taken.Load() != 1 {
		t.Errorf("the link was taken %d times, want once", taken.Load())
	}
	_, err = s.StepUpLink(t.Context(), l.ID)
	wantErr(t, "reading a used link", err, approval.ErrNotFound)
	for _, id := range []string{"", "x", "../a", linkID(t) + "A"} {
		_, err := s.TakeStepUpLink(t.Context(), id)
		wantErr(t, "taking "+id, err, approval.ErrNotFound)
	}
	bad := *l
	bad.ID = "short"
	wantErr(t, "a malformed id", s.SaveStepUpLink(t.Context(), &bad), approval.ErrInvalid)
	bad = *l
	bad.ID, bad.Expires = linkID(t), e.clock.Now().Add(-time.Second)
	wantErr(t, "an expired link", s.SaveStepUpLink(t.Context(), &bad), approval.ErrInvalid)
}

// A step-up proof is recorded with the vote that came with it: each vote
// of a quorum has its approver's, the decided call its decider's, the
// audit entries say method, amr and credential; a vote without one, as
// every record written before step-up, reads nil; a grant keeps its
// proof.
func TestStepUpRecordedWithTheVote(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	a := e.create(t, s, requests("c1", "c2"), 2)
	proof := func(cred string) *approval.StepUp {
		return &approval.StepUp{Method: "webauthn", AMR: []string{"hwk"}, CredentialID: cred, At: e.clock.Now().UTC()}
	}
	for _, d := range []approval.Decision{
		{CallID: "c1", By: "UA", Action: approval.ActionApprove, StepUp: proof("cred-a")},
		{CallID: "c1", By: "UB", Action: approval.ActionApprove, StepUp: proof("cred-b")},
		approve("c2", "UA"),
	} {
		if _, err := s.Decide(ctx, a.Token, d); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get(ctx, a.Token)
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := got.Call("c1"), got.Call("c2")
	if c1.Status != approval.CallApproved || c1.StepUp == nil || c1.StepUp.CredentialID != "cred-b" {
		t.Errorf("c1: %s, step-up %+v; want approved with the decider's proof", c1.Status, c1.StepUp)
	}
	if len(c1.Votes) != 2 || c1.Votes[0].StepUp == nil || c1.Votes[0].StepUp.CredentialID != "cred-a" || c1.Votes[1].StepUp.CredentialID != "cred-b" {
		t.Errorf("c1's votes = %+v, want each with its approver's proof", c1.Votes)
	}
	if c2.StepUp != nil || c2.Votes[0].StepUp != nil {
		t.Errorf("c2, approved without a proof, reads %+v", c2.StepUp)
	}
	evs, err := s.ReadAudit(ctx, "0", 100)
	if err != nil {
		t.Fatal(err)
	}
	var withProof, without int
	for _, ev := range evs {
		switch {
		case ev.CallID == "c1" && (ev.Type == store.AuditVoted || ev.Type == store.AuditDecided):
			if ev.StepUp == "webauthn" && ev.AMR == "hwk" && (ev.Cred == "cred-a" || ev.Cred == "cred-b") {
				withProof++
			}
		case ev.CallID == "c2" && ev.StepUp == "" && ev.Cred == "":
			without++
		}
	}
	if withProof != 2 || without == 0 {
		t.Errorf("audit: %d entries of c1 with the proof (want 2), %d of c2 without", withProof, without)
	}

	g := &approval.Grant{Route: "files", Requester: "U0REQUESTER", Tool: "delete_file", Args: []byte(`{"path":"x"}`), By: "UA",
		CreatedAt: e.clock.Now(), Until: e.clock.Now().Add(time.Hour), StepUp: proof("cred-a")}
	if err := s.SaveGrant(ctx, g); err != nil {
		t.Fatal(err)
	}
	found, err := s.FindGrant(ctx, approval.Grant{Route: "files", Requester: "U0REQUESTER", Tool: "delete_file", Args: []byte(`{"path":"x"}`)})
	if err != nil || found == nil || found.StepUp == nil || found.StepUp.CredentialID != "cred-a" {
		t.Errorf("grant read back: %+v, %v; want its proof", found, err)
	}
}
