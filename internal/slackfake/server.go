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
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
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
	viewOrder  []string
	triggers   map[string]*trigger
	ids        int

	calls  []Call
	limits map[string]*rateLimit
	fails  map[string]*failure
	delays map[string]time.Duration
	drops  map[string]int

	subs    map[int]chan Change
	nextSub int
	seq     uint64
}

// Option configures a Server.
type Option func(*Server)

// WithToken sets the only bot token the server accepts.
func WithToken(token string) Option { return func(s *Server) { s.token = token } }

// WithTeam sets the workspace's team id, name and domain.
func WithTeam(id, name, domain string) Option {
	return func(s *Server) { s.team = Team{ID: id, Name: name, Domain: domain} }
}

// WithBot sets the app's bot user id and name, its bot id and app id.
func WithBot(userID, name, botID, appID string) Option {
	return func(s *Server) {
		delete(s.users, s.botUID)
		s.userOrder = slices.DeleteFunc(s.userOrder, func(id string) bool { return id == s.botUID })
		s.botUID, s.botID, s.appID = userID, botID, appID
		s.addUser(User{ID: userID, Name: name, RealName: name, IsBot: true})
	}
}

// WithUsers adds people to the workspace.
func WithUsers(users ...User) Option {
	return func(s *Server) {
		for _, u := range users {
			s.addUser(u)
		}
	}
}

// WithUsergroups adds usergroups to the workspace.
func WithUsergroups(groups ...Usergroup) Option {
	return func(s *Server) {
		for _, g := range groups {
			s.addUsergroup(g)
		}
	}
}

// WithChannels adds channels to the workspace.
func WithChannels(channels ...Channel) Option {
	return func(s *Server) {
		for _, c := range channels {
			s.addChannel(c)
		}
	}
}

// WithClock sets the clock used for message timestamps, trigger expiry and
// rate-limit windows, so tests control time instead of sleeping.
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// StrictChannels refuses every channel not added with WithChannels or
// AddChannel. By default a well-formed channel id (C…, G…, D…) is created
// on first use, and only names like "#general" are refused.
func StrictChannels() Option { return func(s *Server) { s.strict = true } }

// WithDemoWorkspace adds the people and channels of slackbot's demo:
// U0ALICE and U0BOB approve, U0CAROL asks; usergroup S0APPROVERS holds
// Alice and Bob; channels C0APPROVALS, C0GENERAL and C0SUPPORT.
func WithDemoWorkspace() Option {
	return func(s *Server) {
		WithUsers(
			User{ID: "U0ALICE", Name: "alice", RealName: "Alice Approver", DisplayName: "Alice"},
			User{ID: "U0BOB", Name: "bob", RealName: "Bob Approver", DisplayName: "Bob"},
			User{ID: "U0CAROL", Name: "carol", RealName: "Carol Requester", DisplayName: "Carol"},
		)(s)
		WithUsergroups(Usergroup{ID: "S0APPROVERS", Handle: "approvers", Name: "Approvers", Members: []string{"U0ALICE", "U0BOB"}})(s)
		WithChannels(
			Channel{ID: "C0APPROVALS", Name: "approvals"},
			Channel{ID: "C0GENERAL", Name: "general"},
			Channel{ID: "C0SUPPORT", Name: "support"},
		)(s)
	}
}

// New returns a fake workspace: team T0FAKE, bot user U0BOT ("slackbot"),
// token DefaultToken, no people or channels unless options add them.
func New(opts ...Option) *Server {
	s := &Server{
		token:    DefaultToken,
		team:     Team{ID: "T0FAKE", Name: "Fake Workspace", Domain: "fake"},
		now:      time.Now,
		users:    map[string]*User{},
		groups:   map[string]*Usergroup{},
		channels: map[string]*Channel{},
		messages: map[string][]*Message{},
		views:    map[string]*View{},
		triggers: map[string]*trigger{},
		limits:   map[string]*rateLimit{},
		fails:    map[string]*failure{},
		delays:   map[string]time.Duration{},
		drops:    map[string]int{},
		subs:     map[int]chan Change{},
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

// rateLimit allows n calls of a method per channel within a window.
type rateLimit struct {
	n      int
	window time.Duration
	recent map[string][]time.Time
}

type failure struct {
	status int
	code   string
	left   int
}

// RateLimit lets at most perChannel calls of method (or "*" for every
// method) through per channel within each window of length per; the others
// get HTTP 429 with a Retry-After header in whole seconds and
// {"ok":false,"error":"ratelimited"}, as Slack answers. Windows follow the
// server's clock. perChannel 0 removes the limit.
func (s *Server) RateLimit(method string, perChannel int, per time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if perChannel <= 0 {
		delete(s.limits, method)
		return
	}
	s.limits[method] = &rateLimit{n: perChannel, window: per, recent: map[string][]time.Time{}}
}

// FailNext makes the next n calls of method (or "*") fail with HTTP status
// before they change anything, like an outage between the client and Slack.
func (s *Server) FailNext(method string, status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails[method] = &failure{status: status, left: n}
}

// ErrorNext makes the next n calls of method (or "*") answer HTTP 200 with
// {"ok":false,"error":code} before they change anything.
func (s *Server) ErrorNext(method, code string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails[method] = &failure{status: http.StatusOK, code: code, left: n}
}

// LoseResponseNext makes the next n calls of method (or "*") take effect
// and then lose their response: the connection is closed before any byte
// is written, as when a network path fails after Slack acted. The client
// sees an error and cannot tell whether the call happened; a client that
// simply retries a chat.postMessage posts twice.
func (s *Server) LoseResponseNext(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drops[method] = n
}

// Delay makes every call of method (or "*") wait d before it is handled;
// the wait ends early when the client gives up. 0 removes the delay.
func (s *Server) Delay(method string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		delete(s.delays, method)
		return
	}
	s.delays[method] = d
}

// ChangeKind says what changed.
type ChangeKind string

// Change kinds.
const (
	ChangeMessage        ChangeKind = "message"
	ChangeMessageChanged ChangeKind = "message_changed"
	ChangeMessageDeleted ChangeKind = "message_deleted"
	ChangeEphemeral      ChangeKind = "ephemeral"
	ChangeViewOpened     ChangeKind = "view_opened"
	ChangeViewPushed     ChangeKind = "view_pushed"
	ChangeViewUpdated    ChangeKind = "view_updated"
	ChangeViewClosed     ChangeKind = "view_closed"
)

// Change tells a subscriber that the workspace changed; read the details
// with Message, Ephemerals or View.
type Change struct {
	// Seq numbers changes from 1 without gaps; a subscriber that sees a gap
	// missed changes (it read too slowly) and should reload everything.
	Seq      uint64
	Kind     ChangeKind
	Channel  string
	TS       string
	ThreadTS string
	User     string
	ViewID   string
	At       time.Time
}

// subscriberBuffer is how many events a subscriber may fall behind by
// before it misses some.
const subscriberBuffer = 256

// Subscribe returns a channel of every change from now on, and a function
// that ends the subscription and closes the channel. A subscriber that
// falls more than 256 changes behind misses some (see Change.Seq) rather
// than slowing the server down.
func (s *Server) Subscribe() (<-chan Change, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextSub
	s.nextSub++
	ch := make(chan Change, subscriberBuffer)
	s.subs[id] = ch
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.subs, id)
			close(ch)
		})
	}
}

// emit sends e to every subscriber; s.mu is held.
func (s *Server) emit(e Change) {
	s.seq++
	e.Seq = s.seq
	if e.At.IsZero() {
		e.At = s.now()
	}
	for _, ch := range s.subs {
		select {
		case ch <- e:
		default:
		}
	}
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

	if d := s.delay(method); d > 0 {
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

func (s *Server) delay(method string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.delays[method]; ok {
		return d
	}
	return s.delays["*"]
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

func (s *Server) failure(method string) *failure {
	for _, key := range []string{method, "*"} {
		if f, ok := s.fails[key]; ok && f.left > 0 {
			return f
		}
	}
	return nil
}

// limited counts the call against its method's limit and reports whether
// it is over, with the seconds until a slot frees up.
func (s *Server) limited(req *request) (int, bool) {
	rl, ok := s.limits[req.method]
	if !ok {
		if rl, ok = s.limits["*"]; !ok {
			return 0, false
		}
	}
	now := s.now()
	key := req.str("channel")
	recent := slices.DeleteFunc(rl.recent[key], func(t time.Time) bool { return now.Sub(t) >= rl.window })
	if len(recent) >= rl.n {
		rl.recent[key] = recent
		wait := recent[0].Add(rl.window).Sub(now)
		return max(1, int(math.Ceil(wait.Seconds()))), true
	}
	rl.recent[key] = append(recent, now)
	return 0, false
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
