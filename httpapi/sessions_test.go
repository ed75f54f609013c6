package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/approval"
)

// sessionJSON is a session as /v1/agent-sessions shows it.
type sessionJSON struct {
	ID            string   `json:"id"`
	Token         string   `json:"token"`
	CallID        string   `json:"call_id"`
	SessionID     string   `json:"session_id"`
	Args          []string `json:"args"`
	State         string   `json:"state"`
	Attempts      int      `json:"attempts"`
	Outcome       string   `json:"outcome"`
	RequestStatus string   `json:"request_status"`
}

const sessionUUID = "0b7feff6-468a-461d-8737-4cee10039b86"

// registration is a valid registration of call_1's session, opened under
// idempotency key idem, with changes applied.
func registration(idem string, changes map[string]any) map[string]any {
	body := map[string]any{
		"agent": "claude-code", "idempotency_key": idem, "call_id": "call_1", "session_id": sessionUUID,
		"cwd": "/home/dev/shop", "args": []string{"--model", "opus", "--permission-mode", "acceptEdits"}, "resumer": "laptop",
	}
	for k, v := range changes {
		if v == nil {
			delete(body, k)
		} else {
			body[k] = v
		}
	}
	return body
}

func (e *env) sessions(key, resumer string) []sessionJSON {
	e.t.Helper()
	resp := e.do(request{key: key, method: http.MethodGet, path: "/v1/agent-sessions?resumer=" + resumer})
	var l struct {
		Sessions []sessionJSON `json:"sessions"`
	}
	if resp.status != http.StatusOK || json.Unmarshal(resp.body, &l) != nil {
		e.t.Fatalf("list: %d %s", resp.status, resp.body)
	}
	return l.Sessions
}

func decodeSession(t *testing.T, r response) sessionJSON {
	t.Helper()
	var s sessionJSON
	if err := json.Unmarshal(r.body, &s); err != nil {
		t.Fatalf("decode session: %v in %s", err, r.body)
	}
	return s
}

// testAgentSessions: a session registered with the request its key
// opened is listed once the request ends, claimed by one resumer only,
// finished by that claim; another key sees none of it.
func testAgentSessions(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, deletion("call_1", "/srv/a", map[string]any{"idempotency_key": "claude-code/s1/call_1"}))

	reg := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/agent-sessions", body: registration("claude-code/s1/call_1", nil)})
	if reg.status != http.StatusCreated {
		t.Fatalf("register: %d %s", reg.status, reg.body)
	}
	s := decodeSession(t, reg)
	if s.Token != a.Token || s.State != "waiting" || s.RequestStatus != "pending" {
		t.Errorf("registered %+v, want request %s's waiting session", s, a.Token)
	}
	if again := decodeSession(t, e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/agent-sessions", body: registration("claude-code/s1/call_1", nil)})); again.ID != s.ID {
		t.Errorf("registered again as %s, want %s", again.ID, s.ID)
	}
	if got := e.sessions(keyBilling, "laptop"); len(got) != 0 {
		t.Errorf("listed %+v while the request is pending, want none", got)
	}

	// Another key: not its request, not its session.
	if r := e.do(request{key: keySupport, method: http.MethodPost, path: "/v1/agent-sessions", body: registration("claude-code/s1/call_1", nil)}); r.status != http.StatusNotFound {
		t.Errorf("another key registers with billing's idempotency key: %d %s, want 404", r.status, r.body)
	}

	e.click(alice, e.card(a.Token, "call_1"), approval.ActionApprove)
	got := e.sessions(keyBilling, "laptop")
	if len(got) != 1 || got[0].ID != s.ID || got[0].RequestStatus != "resolved" {
		t.Fatalf("listed %+v after the decision, want the session with its request resolved", got)
	}
	if got := e.sessions(keySupport, "laptop"); len(got) != 0 {
		t.Errorf("another key lists %+v, want none", got)
	}
	claim := func(key string) response {
		return e.do(request{key: key, method: http.MethodPost, path: "/v1/agent-sessions/" + s.ID + "/claim", body: map[string]any{"resumer": "laptop"}})
	}
	if r := claim(keySupport); r.status != http.StatusNotFound {
		t.Errorf("another key claims: %d %s, want 404", r.status, r.body)
	}
	first := claim(keyBilling)
	if c := decodeSession(t, first); first.status != http.StatusOK || c.State != "claimed" || c.Attempts != 1 {
		t.Fatalf("claim: %d %s", first.status, first.body)
	}
	if r := claim(keyBilling); r.status != http.StatusConflict {
		t.Errorf("second claim: %d %s, want 409", r.status, r.body)
	}
	if got := e.sessions(keyBilling, "laptop"); len(got) != 0 {
		t.Errorf("listed %+v while claimed, want none", got)
	}
	finish := func(key string) response {
		return e.do(request{key: key, method: http.MethodPost, path: "/v1/agent-sessions/" + s.ID + "/finish", body: map[string]any{"attempt": 1, "outcome": "resumed"}})
	}
	if r := finish(keySupport); r.status != http.StatusNotFound {
		t.Errorf("another key finishes: %d %s, want 404", r.status, r.body)
	}
	if r := finish(keyBilling); r.status != http.StatusOK || decodeSession(t, r).State != "done" {
		t.Errorf("finish: %d %s", r.status, r.body)
	}
	if r := claim(keyBilling); r.status != http.StatusConflict {
		t.Errorf("claim after the resume: %d %s, want 409", r.status, r.body)
	}
}

// testAgentSessionRegistrationRefused: what a resumer would run comes
// from a registration, so one that could make it run another program or
// option, elsewhere, or that is oversized, is refused with a message
// that says what is wrong, and nothing is registered.
func testAgentSessionRegistrationRefused(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.create(keyBilling, deletion("call_1", "/srv/a", map[string]any{"idempotency_key": "claude-code/s1/call_1"}))
	many := make([]string, 34)
	for i := range many {
		many[i] = "--model"
	}
	for _, tt := range []struct {
		name    string
		changes map[string]any
		status  int
		want    string
	}{
		{"--settings (hooks run programs)", map[string]any{"args": []string{"--settings", "/tmp/evil.json"}}, 400, `"--settings": not a flag`},
		{"--mcp-config", map[string]any{"args": []string{"--mcp-config", "{}"}}, 400, `"--mcp-config": not a flag`},
		{"--dangerously-skip-permissions", map[string]any{"args": []string{"--dangerously-skip-permissions"}}, 400, "not a flag"},
		{"--add-dir", map[string]any{"args": []string{"--add-dir", "/"}}, 400, "not a flag"},
		{"--flag=value", map[string]any{"args": []string{"--model=opus"}}, 400, "not a flag"},
		{"a value that is a flag", map[string]any{"args": []string{"--model", "--settings"}}, 400, "starts with -"},
		{"a flag without its value", map[string]any{"args": []string{"--model"}}, 400, "needs a value"},
		{"bypassPermissions", map[string]any{"args": []string{"--permission-mode", "bypassPermissions"}}, 400, "want one of"},
		{"too many args", map[string]any{"args": many}, 400, "at most 32"},
		{"a huge value", map[string]any{"args": []string{"--append-system-prompt", strings.Repeat("x", 5000)}}, 400, "longer than 4096"},
		{"a relative cwd", map[string]any{"cwd": "shop"}, 400, "clean absolute path"},
		{"a cwd with ..", map[string]any{"cwd": "/home/dev/../../etc"}, 400, "clean absolute path"},
		{"a session id that is not a UUID", map[string]any{"session_id": "--resume"}, 400, "UUID"},
		{"a resumer with a slash", map[string]any{"resumer": "../laptop"}, 400, "resumer"},
		{"another agent", map[string]any{"agent": "codex"}, 400, "only claude-code"},
		{"an unknown field", map[string]any{"program": "/bin/sh"}, 400, `unknown field "program"`},
		{"a call the request lacks", map[string]any{"call_id": "call_9"}, 400, "not a call of the request"},
		{"an unknown idempotency key", map[string]any{"idempotency_key": "claude-code/other/call_1"}, 404, ""},
		{"a body over 1 MiB", map[string]any{"cwd": "/" + strings.Repeat("a", 1<<20)}, 413, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/agent-sessions", body: registration("claude-code/s1/call_1", tt.changes)})
			if r.status != tt.status || !strings.Contains(r.apiError(t).Error.Message, tt.want) {
				t.Errorf("got %d %s, want %d with %q", r.status, r.body, tt.status, tt.want)
			}
		})
	}
	if got := e.sessions(keyBilling, "laptop"); len(got) != 0 {
		t.Errorf("listed %+v, want nothing registered", got)
	}
}
