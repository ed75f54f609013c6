package store_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/approval"
)

// A grant is found for the same route, requester, tool and canonical
// arguments (key order and spacing do not matter, values do), until it
// ends; it is listed under its approver and revoked only by them.
func TestGrants(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	now := e.clock.Now()
	g := &approval.Grant{Route: "deletions", Requester: "U0CAROL", Tool: "delete_customer",
		Args: json.RawMessage(`{"id":"C-1","force":true}`), By: "U0ALICE", CreatedAt: now, Until: now.Add(8 * time.Hour)}
	if err := s.SaveGrant(t.Context(), g); err != nil || g.ID == "" {
		t.Fatalf("SaveGrant: %v (id %q)", err, g.ID)
	}
	if ttl, _ := e.rdb.PTTL(t.Context(), e.prefix+"grant:"+g.ID).Result(); ttl <= 7*time.Hour || ttl > 8*time.Hour {
		t.Errorf("the grant's key lives %v, want until the grant ends", ttl)
	}
	find := func(route, requester, tool, args string) *approval.Grant {
		t.Helper()
		got, err := s.FindGrant(t.Context(), route, requester, tool, json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := find("deletions", "U0CAROL", "delete_customer", ` { "force" : true, "id" : "C-1" } `); got == nil || got.By != "U0ALICE" || !got.Until.Equal(g.Until.Truncate(time.Millisecond)) {
		t.Errorf("the same call, keys reordered: %+v, want Alice's grant", got)
	}
	if got := find("deletions", "U0CAROL", "delete_customer", `"{\"id\":\"C-1\",\"force\":true}"`); got == nil {
		t.Error("arguments as a JSON string holding the object: no grant")
	}
	for _, tt := range []struct{ route, requester, tool, args, why string }{
		{"deletions", "U0CAROL", "delete_customer", `{"id":"C-2","force":true}`, "other arguments"},
		{"deletions", "U0CAROL", "delete_customer", `{"id":"C-1","force":false}`, "another value"},
		{"deletions", "U0CAROL", "delete_customer", `{"id":"C-1"}`, "fewer arguments"},
		{"deletions", "U0DAVE", "delete_customer", `{"id":"C-1","force":true}`, "another requester"},
		{"deletions", "U0CAROL", "delete_file", `{"id":"C-1","force":true}`, "another tool"},
		{"refunds", "U0CAROL", "delete_customer", `{"id":"C-1","force":true}`, "another route"},
		{"deletions", "U0CAROL", "delete_customer", `[1]`, "not an object"},
	} {
		if got := find(tt.route, tt.requester, tt.tool, tt.args); got != nil {
			t.Errorf("%s: found %+v", tt.why, got)
		}
	}
	if list, err := s.Grants(t.Context(), "U0ALICE"); err != nil || len(list) != 1 || list[0].ID != g.ID {
		t.Errorf("Alice's grants: %+v, %v", list, err)
	}
	if _, err := s.RevokeGrant(t.Context(), g.ID, "U0BOB"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("Bob revokes Alice's grant: %v, want ErrNotFound", err)
	}
	e.clock.Advance(8*time.Hour + time.Second)
	if got := find("deletions", "U0CAROL", "delete_customer", `{"id":"C-1","force":true}`); got != nil {
		t.Errorf("an ended grant is found: %+v", got)
	}
	if list, _ := s.Grants(t.Context(), "U0ALICE"); len(list) != 0 {
		t.Errorf("an ended grant is listed: %+v", list)
	}
}

func TestRevokeGrant(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	now := e.clock.Now()
	g := &approval.Grant{Route: "r", Requester: "U0CAROL", Tool: "t", Args: json.RawMessage(`{}`), By: "U0ALICE", CreatedAt: now, Until: now.Add(time.Hour)}
	if err := s.SaveGrant(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	got, err := s.RevokeGrant(t.Context(), g.ID, "U0ALICE")
	if err != nil || got.Route != "r" {
		t.Fatalf("RevokeGrant: %+v, %v", got, err)
	}
	if f, _ := s.FindGrant(t.Context(), "r", "U0CAROL", "t", json.RawMessage(`{}`)); f != nil {
		t.Error("a revoked grant is found")
	}
	if _, err := s.RevokeGrant(t.Context(), g.ID, "U0ALICE"); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("revoking twice: %v, want ErrNotFound", err)
	}
	events, err := s.ReadAudit(t.Context(), "", 0)
	if err != nil || len(events) != 1 || events[0].Type != "grant_revoked" || events[0].By != "U0ALICE" {
		t.Errorf("audit: %+v, %v; want one grant_revoked by U0ALICE", events, err)
	}
	for _, bad := range []*approval.Grant{
		{Route: "r", Requester: "U0CAROL", Tool: "t", Args: json.RawMessage(`[]`), By: "U0ALICE", Until: now.Add(time.Hour)},
		{Route: "r", Requester: "U0CAROL", Tool: "t", Args: json.RawMessage(`{}`), Until: now.Add(time.Hour)},
		{Route: "r", Requester: "U0CAROL", Tool: "t", Args: json.RawMessage(`{}`), By: "U0ALICE", Until: now.Add(-time.Second)},
	} {
		if err := s.SaveGrant(t.Context(), bad); !errors.Is(err, approval.ErrInvalid) {
			t.Errorf("SaveGrant(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
}
