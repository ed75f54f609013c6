// Package slackfake is a fake Slack Web API: an http.Handler that speaks
// the Slack methods slackbot uses, keeps a workspace with channels,
// threads, ephemeral messages and modals in memory, and lets tests inject
// faults (rate limits, failures, delays). Tests point slack-go at it with
// slack.OptionAPIURL; `slackbot dev` uses it as its Slack emulator and
// subscribes to its events to live-update the dev page.
//
// It answers in Slack's JSON shapes and is deliberately strict where Slack
// is: bad tokens, unknown channels and users, Block Kit over Slack's limits
// and stale view hashes are refused with Slack's error codes, so code that
// passes here does not first fail in a real workspace.
package slackfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// DefaultToken is the bot token a Server accepts unless WithToken says
// otherwise.
const DefaultToken = "xoxb-slackfake-0000000000-token"

// Server is a fake Slack workspace behind Slack's Web API. It is safe for
// concurrent use; create one with New or NewTestServer.
type Server struct {
	mu sync.Mutex

	token  string
	team   Team
	botID  string
	appID  string
	botUID string
	now    func() time.Time
	strict bool

	users      map[string]*User
	userOrder  []string
	groups     map[string]*Usergroup
	groupOrder []string
	channels   map[string]*Channel
	chanOrder  []string

	lastTS     int64 // microseconds of the last ts handed out
	messages   map[string][]*Message
	ephemerals []*Ephemeral
	views      map[string]*View
	homes      map[string]*View // the Home tab published for each user
	noHome     bool
	viewOrder  []string
	triggers   map[string]*trigger
	ids        int

	calls  []Call
	limits map[string]*rateLimit
	fails  map[string]*failure
	delays map[string]time.Duration
	drops  map[string]int
	// failEvery and slowEvery are the periodic faults (FailEvery,
	// SlowEvery).
	failEvery map[string]*periodic
	slowEvery map[string]*periodic

	subs    map[int]chan Change
	nextSub int
	seq     uint64
}

// New returns a fake workspace: team T0FAKE, bot user U0BOT ("slackbot"),
// token DefaultToken, no people or channels unless options add them.
func New(opts ...Option) *Server {
	s := &Server{
		token:     DefaultToken,
		team:      Team{ID: "T0FAKE", Name: "Fake Workspace", Domain: "fake"},
		now:       time.Now,
		users:     map[string]*User{},
		groups:    map[string]*Usergroup{},
		channels:  map[string]*Channel{},
		messages:  map[string][]*Message{},
		views:     map[string]*View{},
		homes:     map[string]*View{},
		triggers:  map[string]*trigger{},
		limits:    map[string]*rateLimit{},
		fails:     map[string]*failure{},
		delays:    map[string]time.Duration{},
		drops:     map[string]int{},
		failEvery: map[string]*periodic{},
		slowEvery: map[string]*periodic{},
		subs:      map[int]chan Change{},
	}
	WithBot("U0BOT", "slackbot", "B0BOT", "A0APP")(s)
	for _, o := range opts {
		o(s)
	}
	return s
}

// Token returns the bot token the server accepts.
func (s *Server) Token() string { return s.token }

// Call is one request the server received, whatever its outcome.
type Call struct {
	Method string
	// Params holds form fields, or the top-level fields of a JSON body
	// (strings as they are, other values as JSON text). The token is left out.
	Params map[string]string
	// Body is the raw JSON body of a JSON request.
	Body json.RawMessage
	// Channel is the channel the call named, if any.
	Channel string
	At      time.Time
	// Status is the HTTP status answered; Error the Slack error code when
	// the answer was ok:false.
	Status int
	Error  string
}

// OK reports whether Slack would have answered ok:true.
func (c Call) OK() bool { return c.Status == http.StatusOK && c.Error == "" }

// Calls returns the calls of a method ("" for all), in arrival order.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// nextTS returns a message timestamp after every earlier one: the clock's
// time in microseconds, bumped when the clock has not moved.
func (s *Server) nextTS() string {
	us := s.now().UnixMicro()
	if us <= s.lastTS {
		us = s.lastTS + 1
	}
	s.lastTS = us
	return fmt.Sprintf("%d.%06d", us/1_000_000, us%1_000_000)
}

// apiError is an ok:false answer.
type apiError struct {
	code   string
	errors []string // Block Kit problems, as Slack lists them
}

func errCode(code string) *apiError { return &apiError{code: code} }

// request is a parsed Web API call.
type request struct {
	method string
	form   url.Values
	body   map[string]json.RawMessage // set for JSON requests
	raw    []byte
}

// str returns a parameter as text: form values as sent, JSON strings
// unquoted, other JSON values as their JSON text.
func (r *request) str(key string) string {
	if r.body != nil {
		v, ok := r.body[key]
		if !ok {
			return r.form.Get(key)
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		return string(v)
	}
	return r.form.Get(key)
}

func (r *request) has(key string) bool {
	if r.body != nil {
		if _, ok := r.body[key]; ok {
			return true
		}
	}
	return r.form.Has(key)
}

// json returns a parameter that holds JSON (blocks, view, metadata): sent
// as a JSON value in a JSON body, or as JSON text in a form field or in a
// JSON string.
func (r *request) json(key string) (json.RawMessage, bool) {
	if r.body != nil {
		if v, ok := r.body[key]; ok {
			var s string
			if json.Unmarshal(v, &s) == nil {
				return json.RawMessage(s), true
			}
			return v, true
		}
	}
	if r.form.Has(key) {
		return json.RawMessage(r.form.Get(key)), true
	}
	return nil, false
}

// params returns the parameters for the call log, without the token.
func (r *request) params() map[string]string {
	out := map[string]string{}
	for k := range r.form {
		out[k] = r.form.Get(k)
	}
	for k := range r.body {
		out[k] = r.str(k)
	}
	delete(out, "token")
	return out
}

// maxBody bounds a request body; Slack's own limits are far lower.
const maxBody = 8 << 20

// ServeHTTP answers Slack Web API calls at /api/<method> and /<method>.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/"), "api/")
	if method == "" || strings.Contains(method, "/") {
		http.NotFound(w, r)
		return
	}
	req, token, err := parseRequest(method, r)
	if err != nil {
		s.mu.Lock()
		s.record(req, http.StatusOK, "invalid_form_data")
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, nil, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}

	if d := s.delay(method) + s.slowFor(method); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}

	s.mu.Lock()
	status, header, body := s.handle(req, token)
	lose := false
	for _, key := range []string{method, "*"} {
		if s.drops[key] > 0 {
			s.drops[key]--
			lose = true
			break
		}
	}
	s.mu.Unlock()
	if lose {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	writeJSON(w, status, header, body)
}

func parseRequest(method string, r *http.Request) (*request, string, error) {
	req := &request{method: method, form: r.URL.Query()}
	token := ""
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		token = strings.TrimSpace(strings.TrimPrefix(h, "Bearer "))
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return req, token, fmt.Errorf("read body: %w", err)
	}
	req.raw = raw
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case ct == "application/json":
		if len(bytes.TrimSpace(raw)) > 0 {
			if err := json.Unmarshal(raw, &req.body); err != nil {
				return req, token, fmt.Errorf("json body: %w", err)
			}
		}
		if req.body == nil {
			req.body = map[string]json.RawMessage{}
		}
	case len(raw) > 0:
		form, err := url.ParseQuery(string(raw))
		if err != nil {
			return req, token, fmt.Errorf("form body: %w", err)
		}
		for k, v := range form {
			req.form[k] = append(req.form[k], v...)
		}
	}
	if token == "" {
		token = req.form.Get("token")
	}
	return req, token, nil
}

// handle answers one call; s.mu is held.
func (s *Server) handle(req *request, token string) (int, http.Header, map[string]any) {
	if f := s.failure(req.method); f != nil {
		f.left--
		if f.code != "" {
			s.record(req, http.StatusOK, f.code)
			return http.StatusOK, nil, map[string]any{"ok": false, "error": f.code}
		}
		s.record(req, f.status, "")
		return f.status, nil, map[string]any{"ok": false, "error": "fatal_error"}
	}
	if p := periodicFault(s.failEvery, req.method); p != nil {
		s.record(req, p.status, "")
		return p.status, nil, map[string]any{"ok": false, "error": "fatal_error"}
	}
	switch {
	case token == "":
		s.record(req, http.StatusOK, "not_authed")
		return http.StatusOK, nil, map[string]any{"ok": false, "error": "not_authed"}
	case token != s.token:
		s.record(req, http.StatusOK, "invalid_auth")
		return http.StatusOK, nil, map[string]any{"ok": false, "error": "invalid_auth"}
	}
	if retry, limited := s.limited(req); limited {
		s.record(req, http.StatusTooManyRequests, "ratelimited")
		h := http.Header{"Retry-After": {fmt.Sprint(retry)}}
		return http.StatusTooManyRequests, h, map[string]any{"ok": false, "error": "ratelimited"}
	}
	fn, ok := methods[req.method]
	if !ok {
		s.record(req, http.StatusOK, "unknown_method")
		return http.StatusOK, nil, map[string]any{"ok": false, "error": "unknown_method", "req_method": req.method}
	}
	resp, apiErr := fn(s, req)
	if apiErr != nil {
		s.record(req, http.StatusOK, apiErr.code)
		out := map[string]any{"ok": false, "error": apiErr.code}
		if len(apiErr.errors) > 0 {
			out["errors"] = apiErr.errors
			out["response_metadata"] = map[string]any{"messages": apiErr.errors}
		}
		return http.StatusOK, nil, out
	}
	s.record(req, http.StatusOK, "")
	if resp == nil {
		resp = map[string]any{}
	}
	resp["ok"] = true
	return http.StatusOK, nil, resp
}

func (s *Server) record(req *request, status int, code string) {
	c := Call{Method: req.method, Params: req.params(), Channel: req.str("channel"), At: s.now(), Status: status, Error: code}
	if req.body != nil {
		c.Body = json.RawMessage(bytes.Clone(req.raw))
	}
	s.calls = append(s.calls, c)
}

func writeJSON(w http.ResponseWriter, status int, header http.Header, body any) {
	for k, v := range header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
