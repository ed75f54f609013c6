package bot

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/bot/slackfake"
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
func newClickEnv(t *testing.T, route string, edit func(*Config)) *clickEnv {
	t.Helper()
	fake, ts := slackfake.NewTestServer(t,
		slackfake.WithTeam(smTeam, "Test", "test"),
		slackfake.WithUsers(slackfake.User{ID: smApprover, Name: "alice"}, slackfake.User{ID: smRequester, Name: "bob"},
			slackfake.User{ID: smStranger, Name: "mallory"}),
		slackfake.WithUsergroups(slackfake.Usergroup{ID: smGroup, Handle: "finance", Members: []string{smApprover}}),
		slackfake.WithChannels(slackfake.Channel{ID: smCardChan, Name: "approvals"}, slackfake.Channel{ID: "C0SUPPORT", Name: "support"}))
	approvals := newRecordingApprovals()
	approvals.a.Calls[0].Route = route
	cfg := Config{
		Slack:     slack.New(fake.Token(), slack.OptionAPIURL(slackfake.APIURL(ts))),
		Approvals: approvals, TeamID: smTeam,
		Routes: &Routes{Routes: []*Route{
			{Name: smRoute, Channel: smCardChan, Users: []string{smApprover}, RequiredApprovals: 1},
			{Name: "finance", Channel: smCardChan, Usergroups: []string{smGroup}, RequiredApprovals: 1},
		}},
		Retry: Retry{Attempts: 1, Sleep: func(context.Context, time.Duration) error { return nil }},
	}
	if edit != nil {
		edit(&cfg)
	}
	b := New(cfg)
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

func (e *clickEnv) decisions() []Decision {
	e.approvals.mu.Lock()
	defer e.approvals.mu.Unlock()
	return append([]Decision(nil), e.approvals.decisions...)
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
