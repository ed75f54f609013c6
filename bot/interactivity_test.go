package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
	"github.com/slackapprove/slackbot/routing"
)

// smGroup is the usergroup of the route clickTestRoutes names "finance".
const smGroup = "S0FINANCE"

// clickEnv is a Bot talking to a fake Slack Web API (through slack-go, as
// in production) about the one pending approval of recordingApprovals.
type clickEnv struct {
	fake      *slackfake.Server
	approvals *recordingApprovals
	bot       *Bot
}

// newClickEnv returns a clickEnv whose card is on route (smRoute, whose
// approver is smApprover, or "finance", whose approvers are smGroup's
// members: smApprover). edit changes the Bot's Config before New.
func newClickEnv(t *testing.T, route string, edit func(*testConfig)) *clickEnv {
	t.Helper()
	fake, ts := slackfaketest.NewTestServer(t,
		slackfake.WithTeam(smTeam, "Test", "test"),
		slackfake.WithUsers(slackfake.User{ID: smApprover, Name: "alice"}, slackfake.User{ID: smRequester, Name: "bob"},
			slackfake.User{ID: smStranger, Name: "mallory"}),
		slackfake.WithUsergroups(slackfake.Usergroup{ID: smGroup, Handle: "finance", Members: []string{smApprover}}),
		slackfake.WithChannels(slackfake.Channel{ID: smCardChan, Name: "approvals"}, slackfake.Channel{ID: "C0SUPPORT", Name: "support"}))
	approvals := newRecordingApprovals()
	approvals.a.Calls[0].Route = route
	cfg := testConfig{
		Slack:     slack.New(fake.Token(), slack.OptionAPIURL(slackfaketest.APIURL(ts))),
		Approvals: approvals, TeamID: smTeam,
		Routes: &routing.Routes{Routes: []*routing.Route{
			{Name: smRoute, Channel: smCardChan, Users: []string{smApprover}, RequiredApprovals: 1},
			{Name: "finance", Channel: smCardChan, Usergroups: []string{smGroup}, RequiredApprovals: 1},
		}},
		Retry: Retry{Attempts: 1, Sleep: func(context.Context, time.Duration) error { return nil }},
	}
	if edit != nil {
		edit(&cfg)
	}
	b := newTestBot(cfg)
	t.Cleanup(b.Close)
	return &clickEnv{fake: fake, approvals: approvals, bot: b}
}

// click delivers user's click on the card's button actionID through the
// HTTP handler and returns the answer. Work the click started after the
// acknowledgement is not waited for; see settle.
func (e *clickEnv) click(t *testing.T, user, actionID string) *httptest.ResponseRecorder {
	t.Helper()
	payload := clickPayload(user, actionID, EncodeAction(e.approvals.a.Token, smCallID))
	body := url.Values{"payload": {string(payload)}}.Encode()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/slack/interactivity", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	e.bot.HandleInteraction().ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("click %s by %s: status %d, want 200: %s", actionID, user, w.Code, w.Body)
	}
	return w
}

// settle waits for the work that follows acknowledgements.
func (e *clickEnv) settle() { e.bot.Close() }

// ephemerals returns the texts of the ephemeral messages user was shown.
func (e *clickEnv) ephemerals(user string) []string {
	var out []string
	for _, m := range e.fake.Ephemerals(user) {
		out = append(out, m.Text)
	}
	return out
}

func (e *clickEnv) decisions() []approval.Decision {
	e.approvals.mu.Lock()
	defer e.approvals.mu.Unlock()
	return append([]approval.Decision(nil), e.approvals.decisions...)
}

// TestFailedViewsOpenIsExplained: when Slack refuses to open a modal (the
// click's trigger_id expired, or any other error), the person who clicked
// is told so in an ephemeral message instead of seeing nothing happen.
func TestFailedViewsOpenIsExplained(t *testing.T) {
	tests := []struct {
		name     string
		code     string
		actionID string
		want     string
	}{
		{"expired trigger, deny with reason", "expired_trigger_id", ActionIDDenyReason, "three seconds"},
		{"expired trigger, arguments", "expired_trigger_id", ActionIDViewArgs, "Click the button again."},
		{"other error", "internal_error", ActionIDEdit, "Slack answered: internal_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newClickEnv(t, smRoute, nil)
			e.fake.ErrorNext("views.open", tt.code, 1)
			e.click(t, smApprover, tt.actionID)
			e.settle()
			if n := len(e.fake.Calls("views.open")); n != 1 {
				t.Fatalf("views.open calls: got %d, want 1", n)
			}
			got := e.ephemerals(smApprover)
			if len(got) != 1 || !strings.Contains(got[0], tt.want) || !strings.Contains(got[0], "did not open") && !strings.Contains(got[0], "could not open") {
				t.Errorf("ephemerals for the clicker: got %q, want one saying the form did not open (%q)", got, tt.want)
			}
			if d := e.decisions(); len(d) != 0 {
				t.Errorf("decisions: got %v, want none", d)
			}
		})
	}
}

// TestViewsOpenThatWorksSaysNothing: an opened modal needs no message.
func TestViewsOpenThatWorksSaysNothing(t *testing.T) {
	e := newClickEnv(t, smRoute, nil)
	payload := clickPayload(smApprover, ActionIDDenyReason, EncodeAction(e.approvals.a.Token, smCallID))
	var p map[string]any
	_ = json.Unmarshal(payload, &p)
	p["trigger_id"] = e.fake.IssueTrigger(smApprover, "")
	body := url.Values{"payload": {string(mustJSON(p))}}.Encode()
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/slack/interactivity", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	e.bot.HandleInteraction().ServeHTTP(httptest.NewRecorder(), r)
	e.settle()
	if v := e.fake.Views(); len(v) != 1 {
		t.Errorf("open views: got %d, want 1", len(v))
	}
	if got := e.ephemerals(smApprover); len(got) != 0 {
		t.Errorf("ephemerals: got %q, want none", got)
	}
}

// stallingApprovals is a store that can stall like a frozen Redis: a
// stalled method waits for its context to end and fails with its error,
// as go-redis does when commands get no answer.
type stallingApprovals struct {
	*recordingApprovals
	mu sync.Mutex
	// stallGet stalls Get; stallDecide stalls Decide before it records
	// anything; lateReply records the decision and then stalls, as when
	// Redis ran the script but its answer never came back.
	stallGet, stallDecide, lateReply bool
	tooLate                          bool // Decide answers approval.ErrTooLate
	// failGets is how many Gets fail next with a network error, as while
	// Redis fails over: the connection to the old primary is refused.
	failGets int
}

func (s *stallingApprovals) flags() (get, decide, late, tooLate bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stallGet, s.stallDecide, s.lateReply, s.tooLate
}

// LockCard reads the request as Get does: the fake holds no leases.
func (s *stallingApprovals) LockCard(ctx context.Context, token, _, _ string) (*approval.Request, error) {
	return s.Get(ctx, token)
}

func (s *stallingApprovals) Get(ctx context.Context, token string) (*approval.Request, error) {
	if get, _, _, _ := s.flags(); get {
		<-ctx.Done()
		return nil, fmt.Errorf("get %s: %w", token, ctx.Err())
	}
	s.mu.Lock()
	fail := s.failGets > 0
	if fail {
		s.failGets--
	}
	s.mu.Unlock()
	if fail {
		return nil, fmt.Errorf("get %s: %w", token, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	}
	return s.recordingApprovals.Get(ctx, token)
}

func (s *stallingApprovals) Decide(ctx context.Context, token string, d approval.Decision) (*approval.Decided, error) {
	_, decide, late, tooLate := s.flags()
	switch {
	case tooLate:
		return nil, fmt.Errorf("decide: %w", approval.ErrTooLate)
	case decide:
		<-ctx.Done()
		return nil, fmt.Errorf("decide: %w", ctx.Err())
	case late:
		if _, err := s.recordingApprovals.Decide(ctx, token, d); err != nil {
			return nil, err
		}
		<-ctx.Done()
		return nil, fmt.Errorf("decide: %w", ctx.Err())
	}
	return s.recordingApprovals.Decide(ctx, token, d)
}

// state returns the call's state in the store.
func (e *clickEnv) state() approval.CallStatus {
	e.approvals.mu.Lock()
	defer e.approvals.mu.Unlock()
	return e.approvals.a.Calls[0].Status
}

// TestSlowUsergroupLookupDoesNotHoldTheAck: usergroups.users.list takes
// far longer than the acknowledgement budget. The click is answered
// before Slack answers the lookup, with the explanation, and decides
// nothing; the lookup finishes in the background and fills the cache, so
// the next click is decided at once.
func TestSlowUsergroupLookupDoesNotHoldTheAck(t *testing.T) {
	e := newClickEnv(t, "finance", func(c *testConfig) { c.AckBudget = 200 * time.Millisecond })
	e.fake.Delay("usergroups.users.list", time.Second)

	e.click(t, smApprover, ActionIDApprove)
	if n := len(e.fake.Calls("usergroups.users.list")); n != 0 {
		t.Fatalf("usergroups.users.list answered before the acknowledgement (%d calls); the click waited for it", n)
	}
	e.settle()
	if got := e.ephemerals(smApprover); len(got) != 1 || got[0] != tooLateText {
		t.Errorf("ephemerals: got %q, want the explanation %q", got, tooLateText)
	}
	if d := e.decisions(); len(d) != 0 {
		t.Errorf("decisions: got %v, want none", d)
	}
	if n := len(e.fake.Calls("usergroups.users.list")); n != 1 {
		t.Errorf("usergroups.users.list calls: got %d, want 1 (the lookup finishes in the background)", n)
	}

	e.click(t, smApprover, ActionIDApprove)
	e.settle()
	if got := e.state(); got != approval.CallApproved {
		t.Errorf("after the cache was filled, the click left the call %s, want approved", got)
	}
	if n := len(e.fake.Calls("usergroups.users.list")); n != 1 {
		t.Errorf("usergroups.users.list calls: got %d, want still 1 (cached)", n)
	}
}

// TestFrozenStoreDecidesNothing: the store stops answering at each step
// of the click's path before the acknowledgement. Each time the click is
// answered within the budget, the person is told the truth, and nothing
// is decided unless it was recorded before the deadline.
func TestFrozenStoreDecidesNothing(t *testing.T) {
	tests := []struct {
		name      string
		set       func(s *stallingApprovals)
		wantState approval.CallStatus
		wantTold  string
		wantCard  bool // the card was updated
		failGets  int  // Gets that fail after the acknowledgement
	}{
		{"loading the request stalls", func(s *stallingApprovals) { s.stallGet = true }, approval.CallPending, tooLateText, false, 0},
		{"recording stalls", func(s *stallingApprovals) { s.stallDecide = true }, approval.CallPending, tooLateText, false, 0},
		{"the store refuses the decision as late", func(s *stallingApprovals) { s.tooLate = true }, approval.CallPending, tooLateText, false, 0},
		{"recorded, but the answer came too late", func(s *stallingApprovals) { s.lateReply = true }, approval.CallApproved, "Your click was recorded", true, 0},
		// The store fails over after the acknowledgement: confirmLater
		// reads again until it finds out, instead of telling the person
		// it could not (a chaos soak under load saw both clicks of card 47
		// told "could not confirm" while Redis was failing over).
		{"recorded, the answer came too late, and the store fails over", func(s *stallingApprovals) { s.lateReply = true }, approval.CallApproved, "Your click was recorded", true, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stalling *stallingApprovals
			e := newClickEnv(t, smRoute, func(c *testConfig) {
				stalling = &stallingApprovals{recordingApprovals: c.Approvals.(*recordingApprovals)}
				c.Approvals = stalling
				c.AckBudget = 100 * time.Millisecond
			})
			stalling.mu.Lock()
			tt.set(stalling)
			stalling.mu.Unlock()
			e.click(t, smApprover, ActionIDApprove)
			// What happens after the acknowledgement sees a store that
			// answers again.
			stalling.mu.Lock()
			stalling.stallGet, stalling.stallDecide, stalling.lateReply = false, false, false
			stalling.failGets = tt.failGets
			stalling.mu.Unlock()
			e.settle()

			if got := e.state(); got != tt.wantState {
				t.Errorf("call state: got %s, want %s", got, tt.wantState)
			}
			got := e.ephemerals(smApprover)
			if len(got) != 1 || !strings.HasPrefix(got[0], tt.wantTold) {
				t.Errorf("ephemerals: got %q, want one starting %q", got, tt.wantTold)
			}
			if updated := len(e.fake.Calls("chat.update")) > 0; updated != tt.wantCard {
				t.Errorf("card updated: got %v, want %v", updated, tt.wantCard)
			}
		})
	}
}

// TestSocketModeClickWithFrozenStoreIsAcknowledgedInBudget: over Socket
// Mode the same budget holds: the envelope is acknowledged although the
// store never answers, and the person is told nothing changed.
func TestSocketModeClickWithFrozenStoreIsAcknowledgedInBudget(t *testing.T) {
	slackAPI := &recordingSlack{}
	stalling := &stallingApprovals{recordingApprovals: newRecordingApprovals(), stallGet: true}
	b := newTestBot(testConfig{
		Slack: slackAPI, Approvals: stalling, TeamID: smTeam, AckBudget: 100 * time.Millisecond,
		Routes: &routing.Routes{Routes: []*routing.Route{{Name: smRoute, Channel: smCardChan, Users: []string{smApprover}, RequiredApprovals: 1}}},
	})
	fake := newFakeSocketSlack(t, smAppToken)
	stop := startSocketMode(t, fake, &SocketMode{Bot: b}, smAppToken)
	conn := fake.next(t)
	conn.send(t, interactiveEnvelope("env-frozen", clickPayload(smApprover, ActionIDApprove, EncodeAction(stalling.a.Token, smCallID))))
	if got := conn.ack(t, "env-frozen"); got != "" {
		t.Errorf("acknowledgement payload: got %s, want none", got)
	}
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	b.Close()
	want := "chat.postEphemeral " + smCardChan + " " + smApprover + " " + tooLateText
	if calls := slackAPI.Calls(); len(calls) != 1 || calls[0] != want {
		t.Errorf("Slack calls: got %q, want only the explanation %q", calls, want)
	}
	if d := stalling.decisions; len(d) != 0 {
		t.Errorf("decisions: got %v, want none", d)
	}
}

// TestFrozenStoreModalSubmission: a modal submitted while the store
// stalls is answered in the modal within the budget; afterwards the
// person is told whether it was recorded (here: it was not).
func TestFrozenStoreModalSubmission(t *testing.T) {
	var stalling *stallingApprovals
	e := newClickEnv(t, smRoute, func(c *testConfig) {
		stalling = &stallingApprovals{recordingApprovals: c.Approvals.(*recordingApprovals), stallDecide: true}
		c.Approvals = stalling
		c.AckBudget = 100 * time.Millisecond
	})
	payload := submitPayload(e.approvals.a.Token, smApprover, CallbackDenyReason, BlockIDDenyReason, ActionIDDenyReasonInput, "not today")
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/slack/interactivity",
		strings.NewReader(url.Values{"payload": {string(payload)}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	e.bot.HandleInteraction().ServeHTTP(w, r)
	stalling.mu.Lock()
	stalling.stallDecide = false
	stalling.mu.Unlock()
	e.settle()

	var resp struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || resp.ResponseAction != "errors" ||
		!strings.Contains(resp.Errors[BlockIDDenyReason], "could not confirm in time") {
		t.Errorf("modal answer: got %s, want an error on %s saying it could not be confirmed", w.Body, BlockIDDenyReason)
	}
	if got := e.state(); got != approval.CallPending {
		t.Errorf("call state: got %s, want pending", got)
	}
	if got := e.ephemerals(smApprover); len(got) != 1 || got[0] != tooLateText {
		t.Errorf("ephemerals: got %q, want %q", got, tooLateText)
	}
}

// TestLateConfirmationDoesNotCountAgain: a person clicks Approve twice
// (on two replicas, or Slack retries the click); the first click records
// the decision, the second's reply is lost past the acknowledgement
// budget. The late confirmation of the second finds the person's decision
// on the call, but it was the first click's: the decision is counted once.
func TestLateConfirmationDoesNotCountAgain(t *testing.T) {
	var stalling *stallingApprovals
	metrics := &countingMetrics{}
	e := newClickEnv(t, smRoute, func(c *testConfig) {
		stalling = &stallingApprovals{recordingApprovals: c.Approvals.(*recordingApprovals)}
		c.Approvals = stalling
		c.AckBudget = 100 * time.Millisecond
		c.Metrics = metrics
	})
	e.click(t, smApprover, ActionIDApprove)
	stalling.mu.Lock()
	stalling.stallDecide = true
	stalling.mu.Unlock()
	e.click(t, smApprover, ActionIDApprove)
	stalling.mu.Lock()
	stalling.stallDecide = false
	stalling.mu.Unlock()
	e.settle()

	if got := e.state(); got != approval.CallApproved {
		t.Fatalf("call state: got %s, want approved", got)
	}
	if got := e.ephemerals(smApprover); len(got) != 1 || !strings.HasPrefix(got[0], "Your click was recorded") {
		t.Errorf("ephemerals: got %q, want the late confirmation", got)
	}
	if got := metrics.decisions(); !slices.Equal(got, []string{"approved"}) {
		t.Errorf("decisions counted: got %q, want one approval", got)
	}
}
