package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// This file is the registry of deferred coding-agent sessions at /v1:
// a run of Claude Code that deferred a tool call to a request is
// registered with that request, and a resumer (one per machine or CI
// runner, under the same API key) waits for the sessions whose requests
// ended, claims each once and resumes it. Only the key that registered a
// session can read, claim or finish it.

// Session states, as slackbot reports them.
const (
	SessionWaiting = "waiting"
	SessionClaimed = "claimed"
	SessionDone    = "done"
	SessionFailed  = "failed"
)

// SessionRegistration registers a deferred session (POST
// /v1/agent-sessions).
type SessionRegistration struct {
	// Agent is the agent: "claude-code".
	Agent string `json:"agent"`
	// IdempotencyKey is the key the hook opened the request with: it
	// names the request, among the key's own.
	IdempotencyKey string `json:"idempotency_key"`
	// CallID is the deferred tool call's id (Claude Code's tool_use_id).
	CallID string `json:"call_id"`
	// SessionID is the agent's session to resume (a UUID).
	SessionID string `json:"session_id"`
	// Cwd is the absolute directory the agent ran in.
	Cwd string `json:"cwd"`
	// Args are the flags to resume with (CheckResumeArgs).
	Args []string `json:"args"`
	// Resumer names the resumer that resumes the session.
	Resumer string `json:"resumer"`
}

// Session is a registered session as slackbot shows it.
type Session struct {
	ID        string   `json:"id"`
	Resumer   string   `json:"resumer"`
	Agent     string   `json:"agent"`
	Token     string   `json:"token"`
	CallID    string   `json:"call_id"`
	SessionID string   `json:"session_id"`
	Cwd       string   `json:"cwd"`
	Args      []string `json:"args"`
	// State is one of the Session constants; Attempts counts its claims
	// and names the current one (FinishSession).
	State      string     `json:"state"`
	Attempts   int        `json:"attempts"`
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	Outcome    string     `json:"outcome,omitempty"`
	// RequestStatus is the status of the request the call waits in.
	RequestStatus string `json:"request_status"`
}

// SessionList is the answer of GET /v1/agent-sessions.
type SessionList struct {
	Sessions []Session `json:"sessions"`
}

// RegisterSession registers a deferred session with the request the
// key opened under reg.IdempotencyKey.
func (c *Client) RegisterSession(ctx context.Context, reg SessionRegistration) (*Session, error) {
	var s Session
	return &s, c.call(ctx, http.MethodPost, "/v1/agent-sessions", reg, &s)
}

// ReadySessions returns the key's sessions registered for resumer that
// can be resumed now (their request ended, nobody holds them), waiting
// up to wait (at most MaxWait) for one.
func (c *Client) ReadySessions(ctx context.Context, resumer string, wait time.Duration) ([]Session, error) {
	q := url.Values{"resumer": {resumer}}
	if wait > 0 {
		secs := int(math.Ceil(min(wait, MaxWait).Seconds()))
		q.Set("wait", strconv.Itoa(secs)+"s")
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(secs)*time.Second+WaitSlack)
		defer cancel()
	}
	var l SessionList
	return l.Sessions, c.call(ctx, http.MethodGet, "/v1/agent-sessions?"+q.Encode(), nil, &l)
}

// ClaimSession claims session id for resumer for lease: once. Another
// resumer's claim, or a session resumed already, is a conflict (Error
// with CodeConflict). A session claimed too often without finishing comes
// back with State SessionFailed, for the resumer to report.
func (c *Client) ClaimSession(ctx context.Context, id, resumer string, lease time.Duration) (*Session, error) {
	var s Session
	body := map[string]any{"resumer": resumer, "lease_seconds": int(lease.Seconds())}
	return &s, c.call(ctx, http.MethodPost, "/v1/agent-sessions/"+url.PathEscape(id)+"/claim", body, &s)
}

// FinishSession records how the resume under claim attempt ended.
func (c *Client) FinishSession(ctx context.Context, id string, attempt int, outcome string) (*Session, error) {
	var s Session
	body := map[string]any{"attempt": attempt, "outcome": outcome}
	return &s, c.call(ctx, http.MethodPost, "/v1/agent-sessions/"+url.PathEscape(id)+"/finish", body, &s)
}

// call makes one request and decodes its JSON answer into out.
func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	switch {
	case err != nil:
		return &UnreachableError{Err: fmt.Errorf("read the response: %w", err)}
	case len(b) > MaxResponse:
		return &ResponseError{Status: resp.StatusCode, Problem: fmt.Sprintf("a body larger than %d bytes", MaxResponse)}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return statusError(resp, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return &ResponseError{Status: resp.StatusCode, Err: err}
	}
	return nil
}

// Limits of a session's registration, checked by slackbot and again by
// the resumer before it runs anything.
const (
	MaxResumeArgs   = 32
	MaxResumeArgLen = 4096
	MaxCwdLen       = 4096
	MaxResumerLen   = 100
)

// resumeFlags are the only flags a session may be resumed with, each
// followed by exactly one value: what chooses the model and what the
// agent may do, never what makes it run other programs (--settings and
// its hooks, --mcp-config, --plugin-dir), reach other directories
// (--add-dir) or skip its permissions (--dangerously-skip-permissions).
// The names and choices are Claude Code 2.1.332's (claude --help;
// --max-turns is accepted though not listed there).
var resumeFlags = map[string]func(string) error{
	"--model":                anyValue,
	"--fallback-model":       anyValue,
	"--permission-mode":      oneOf("acceptEdits", "auto", "manual", "dontAsk", "plan"),
	"--allowedTools":         anyValue,
	"--allowed-tools":        anyValue,
	"--disallowedTools":      anyValue,
	"--disallowed-tools":     anyValue,
	"--max-turns":            digits,
	"--append-system-prompt": anyValue,
	"--effort":               oneOf("low", "medium", "high", "xhigh", "max"),
}

func anyValue(string) error { return nil }

func oneOf(vals ...string) func(string) error {
	return func(v string) error {
		for _, ok := range vals {
			if v == ok {
				return nil
			}
		}
		return fmt.Errorf("want one of %s", strings.Join(vals, ", "))
	}
}

var digitsRE = regexp.MustCompile(`^[0-9]{1,6}$`)

func digits(v string) error {
	if !digitsRE.MatchString(v) {
		return fmt.Errorf("want a number")
	}
	return nil
}

// CheckResumeArgs checks the flags a session is resumed with against the
// allow-list above, in one reading: "--flag value" pairs only (no
// "--flag=value"), values that are not themselves flags, at most
// MaxResumeArgs arguments of at most MaxResumeArgLen bytes, no NUL.
func CheckResumeArgs(args []string) error {
	if len(args) > MaxResumeArgs {
		return fmt.Errorf("%d arguments; at most %d", len(args), MaxResumeArgs)
	}
	for i := 0; i < len(args); i += 2 {
		flag := args[i]
		check, ok := resumeFlags[flag]
		if !ok {
			return fmt.Errorf("argument %q: not a flag a session may be resumed with (allowed: %s, each with a value)", shorten(flag, 60), allowedFlags())
		}
		if i+1 >= len(args) {
			return fmt.Errorf("%s needs a value", flag)
		}
		v := args[i+1]
		switch {
		case len(v) > MaxResumeArgLen:
			return fmt.Errorf("%s: value longer than %d bytes", flag, MaxResumeArgLen)
		case strings.HasPrefix(v, "-"), strings.ContainsRune(v, 0):
			return fmt.Errorf("%s: value %q starts with - or holds NUL", flag, shorten(v, 60))
		}
		if err := check(v); err != nil {
			return fmt.Errorf("%s %q: %w", flag, shorten(v, 60), err)
		}
	}
	return nil
}

func allowedFlags() string {
	names := make([]string, 0, len(resumeFlags))
	for n := range resumeFlags {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// CheckSession checks a registration as slackbot and a resumer do before
// they keep or run it: a Claude Code session id (a UUID), an absolute
// clean directory, a resumer name of letters, digits, ".", "_" and "-",
// and flags CheckResumeArgs accepts.
func CheckSession(agent, sessionID, cwd, resumer string, args []string) error {
	switch {
	case agent != "claude-code":
		return fmt.Errorf("agent %q: only claude-code sessions can be resumed", shorten(agent, 40))
	case !uuidRE.MatchString(sessionID):
		return fmt.Errorf("session_id %q: want a Claude Code session id (a lower-case UUID)", shorten(sessionID, 60))
	case len(cwd) > MaxCwdLen || !strings.HasPrefix(cwd, "/") || strings.ContainsRune(cwd, 0) || path.Clean(cwd) != cwd:
		return fmt.Errorf("cwd %q: want a clean absolute path of at most %d bytes", shorten(cwd, 60), MaxCwdLen)
	}
	if err := CheckResumer(resumer); err != nil {
		return err
	}
	if err := CheckResumeArgs(args); err != nil {
		return fmt.Errorf("args: %w", err)
	}
	return nil
}

var resumerRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)

// CheckResumer checks a resumer's name: 1 to MaxResumerLen letters,
// digits, ".", "_" and "-".
func CheckResumer(name string) error {
	if !resumerRE.MatchString(name) {
		return fmt.Errorf("resumer %q: want 1 to %d letters, digits, '.', '_' or '-'", shorten(name, 60), MaxResumerLen)
	}
	return nil
}
