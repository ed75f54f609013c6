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
		got, err := s.FindGrant(t.Context(), approval.Grant{Route: route, Requester: requester, Tool: tool, Args: json.RawMessage(args)})
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

// A grant on an API client's call holds the name the client gave (what
// its card named: a working directory, an MCP client) and is found only
// for calls that give the same one: not with another name, nor with none;
// a grant with no name is found only without one.
func TestGrantKeepsTheClientsName(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	now := e.clock.Now()
	const shop = "Claude Code (/home/ana/shop)"
	for _, name := range []string{shop, ""} {
		g := &approval.Grant{Route: "r", Requester: "api:laptop", Name: name, Tool: "t", Args: json.RawMessage(`{"n":1}`),
			By: "U0ALICE", CreatedAt: now, Until: now.Add(time.Hour)}
		if err := s.SaveGrant(t.Context(), g); err != nil {
			t.Fatal(err)
		}
		for _, other := range []string{shop, "Claude Code (/home/bo/bank)", ""} {
			got, err := s.FindGrant(t.Context(), approval.Grant{Route: "r", Requester: "api:laptop", Name: other, Tool: "t", Args: json.RawMessage(`{"n":1}`)})
			switch {
			case err != nil:
				t.Fatal(err)
			case other == name && (got == nil || got.ID != g.ID || got.Name != name):
				t.Errorf("grant for %q, call as %q: %+v, want the grant", name, other, got)
			case other != name && got != nil && got.Name == name:
				t.Errorf("grant for %q covers a call as %q", name, other)
			}
		}
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
	if f, _ := s.FindGrant(t.Context(), approval.Grant{Route: "r", Requester: "U0CAROL", Tool: "t", Args: json.RawMessage(`{}`)}); f != nil {
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

// RFC 8785 writes numbers as IEEE 754 doubles, so integers beyond 2^53 (an
// account id, an amount in cents) and decimals with more digits than a
// double holds collapse into one canonical form. A grant must never cover
// another number: such arguments get no grant (a card every time), while
// the number forms that say the same value (1, 1.0, 1e0) still share one.
func TestGrantNumbersNeverWiden(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	now := e.clock.Now()
	save := func(args string) error {
		g := &approval.Grant{Route: "r", Requester: "U0CAROL", Tool: "transfer", Args: json.RawMessage(args),
			By: "U0ALICE", CreatedAt: now, Until: now.Add(time.Hour)}
		return s.SaveGrant(t.Context(), g)
	}
	find := func(args string) *approval.Grant {
		t.Helper()
		g, err := s.FindGrant(t.Context(), approval.Grant{Route: "r", Requester: "U0CAROL", Tool: "transfer", Args: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for _, tt := range []struct{ granted, other string }{
		{`{"to":9007199254740993}`, `{"to":9007199254740992}`},
		{`{"to":12345678901234567891}`, `{"to":12345678901234567890}`},
		{`{"amount":0.10000000000000001}`, `{"amount":0.1}`},
		{`{"amount":1e-400}`, `{"amount":0}`},
	} {
		if err := save(tt.granted); !errors.Is(err, approval.ErrInvalid) {
			t.Errorf("SaveGrant(%s) = %v, want ErrInvalid (no double holds it)", tt.granted, err)
		}
		if g := find(tt.other); g != nil {
			t.Errorf("a grant of %s approves %s", tt.granted, tt.other)
		}
		if g := find(tt.granted); g != nil {
			t.Errorf("a grant of %s is found", tt.granted)
		}
	}
	if err := save(`{"amount":1,"n":[0.5,-0,2.50]}`); err != nil {
		t.Fatal(err)
	}
	for _, same := range []string{`{"amount":1.0,"n":[5e-1,0,2.5]}`, `{"n":[0.50,0.0,25E-1],"amount":1e0}`} {
		if find(same) == nil {
			t.Errorf("%s says the same numbers: no grant", same)
		}
	}
}

// An approver's index of grants forgets the grants that ended: one who
// grants every day keeps it alive, and it must not grow for ever.
func TestGrantIndexForgetsEndedGrants(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	for day := range 5 {
		now := e.clock.Now()
		g := &approval.Grant{Route: "r", Requester: "U0CAROL", Tool: "t", Args: json.RawMessage(`{"day":` + string(rune('0'+day)) + `}`),
			By: "U0ALICE", CreatedAt: now, Until: now.Add(time.Hour)}
		if err := s.SaveGrant(t.Context(), g); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(24 * time.Hour)
	}
	if n, err := e.rdb.ZCard(t.Context(), e.prefix+"grants:U0ALICE").Result(); err != nil || n != 1 {
		t.Errorf("Alice's index holds %d grants (%v), want only the one in force when the last was made", n, err)
	}
}
