package bot

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

const (
	testPublicURL     = "https://slackbot.example.com"
	testSigningSecret = "8f742231b10e8888abcd99yyyzzz85a5"
)

// fakePasskeys is the step-up pages as the Bot sees them: each person's
// credentials, the registration links handed out, the removals asked.
type fakePasskeys struct {
	mu       sync.Mutex
	creds    map[string][]PasskeyInfo // by team+"/"+user
	links    int
	removed  []string // team/user/id
	listWait chan struct{}
}

func newFakePasskeys() *fakePasskeys { return &fakePasskeys{creds: map[string][]PasskeyInfo{}} }

func (f *fakePasskeys) add(team, user string, p PasskeyInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creds[team+"/"+user] = append(f.creds[team+"/"+user], p)
}

func (f *fakePasskeys) RegistrationLink(_ context.Context, team, user string) (string, time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.links++
	return testPublicURL + "/passkeys/register/reg-" + user, created.Add(5 * time.Minute), nil
}

func (f *fakePasskeys) List(ctx context.Context, team, user string) ([]PasskeyInfo, error) {
	if f.listWait != nil {
		select {
		case <-f.listWait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.creds[team+"/"+user]), nil
}

func (f *fakePasskeys) Remove(_ context.Context, team, user, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := team + "/" + user
	n := len(f.creds[k])
	f.creds[k] = slices.DeleteFunc(f.creds[k], func(p PasskeyInfo) bool { return p.ID == id })
	if len(f.creds[k]) == n {
		return approval.Errorf(approval.ENOTFOUND, "no such passkey")
	}
	f.removed = append(f.removed, k+"/"+id)
	return nil
}

// stepUpApprovals is recordingApprovals that also keeps step-up links.
type stepUpApprovals struct {
	*recordingApprovals
	lmu   sync.Mutex
	links []*approval.StepUpLink
	// stall, when set, holds SaveStepUpLink until it is closed.
	stall chan struct{}
}

func (s *stepUpApprovals) SaveStepUpLink(ctx context.Context, l *approval.StepUpLink) error {
	if s.stall != nil {
		select {
		case <-s.stall:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.lmu.Lock()
	defer s.lmu.Unlock()
	c := *l
	s.links = append(s.links, &c)
	return nil
}

func (s *stepUpApprovals) StepUpLink(_ context.Context, id string) (*approval.StepUpLink, error) {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	for _, l := range s.links {
		if l.ID == id {
			c := *l
			return &c, nil
		}
	}
	return nil, approval.ErrNotFound
}

func (s *stepUpApprovals) TakeStepUpLink(ctx context.Context, id string) (*approval.StepUpLink, error) {
	l, err := s.StepUpLink(ctx, id)
	if err != nil {
		return nil, err
	}
	s.lmu.Lock()
	defer s.lmu.Unlock()
	s.links = slices.DeleteFunc(s.links, func(x *approval.StepUpLink) bool { return x.ID == id })
	return l, nil
}

func (s *stepUpApprovals) savedLinks() []*approval.StepUpLink {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	return slices.Clone(s.links)
}

// stepUpEnv is a clickEnv whose card's route (smRoute) asks for step-up,
// offers grants, and whose request has a second pending approval (for
// Approve all); the Bot has step-up pages (fakePasskeys) at
// testPublicURL.
type stepUpEnv struct {
	*clickEnv
	links    *stepUpApprovals
	passkeys *fakePasskeys
}

func newStepUpEnv(t *testing.T, edit func(*testConfig)) *stepUpEnv {
	t.Helper()
	e := &stepUpEnv{passkeys: newFakePasskeys()}
	e.clickEnv = newClickEnv(t, smRoute, func(tc *testConfig) {
		rec := tc.Approvals.(*recordingApprovals)
		rec.a.Requests.Approvals = append(rec.a.Requests.Approvals,
			agentrunner.ToolCallPart{ToolName: "delete_customer", Args: json.RawMessage(`{"id":"c_1"}`), ToolCallID: "call_two"})
		rec.a.Calls = append(rec.a.Calls, approval.Call{ID: "call_two", Kind: agentrunner.KindApproval, Route: smRoute, Required: 1, Status: approval.CallPending,
			Message: approval.MessageRef{Channel: smCardChan, ID: "1700000000.000900"}})
		e.links = &stepUpApprovals{recordingApprovals: rec}
		tc.Approvals = e.links
		route := tc.Routes.Routes[0]
		route.StepUp = routing.StepUp{Always: true}
		route.Grants = time.Hour
		tc.Passkeys, tc.PublicURL = e.passkeys, testPublicURL
		if edit != nil {
			edit(tc)
		}
	})
	return e
}

// signedClick delivers a block_actions payload as Slack would, signed,
// through VerifySlack and the interactivity handler, and returns the
// answer and how long it took.
func (e *stepUpEnv) signedClick(t *testing.T, payload json.RawMessage) (*httptest.ResponseRecorder, time.Duration) {
	t.Helper()
	body := []byte(url.Values{"payload": {string(payload)}}.Encode())
	r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/slack/interactivity", strings.NewReader(string(body)))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	SignSlackRequest(r.Header, testSigningSecret, time.Now(), body)
	w := httptest.NewRecorder()
	start := time.Now()
	VerifySlack(testSigningSecret, nil, e.bot.HandleInteraction()).ServeHTTP(w, r)
	took := time.Since(start)
	if w.Code != http.StatusOK {
		t.Fatalf("click: status %d, want 200: %s", w.Code, w.Body)
	}
	return w, took
}

// homePayload is a block_actions payload from user's App Home.
func homePayload(user, actionID, value string) json.RawMessage {
	return mustJSON(map[string]any{
		"type": "block_actions", "user": map[string]any{"id": user}, "team": map[string]any{"id": smTeam},
		"trigger_id": "trigger-home", "api_app_id": "A0APP",
		"container": map[string]any{"type": "view", "view_id": "V0HOME"},
		"view":      map[string]any{"id": "V0HOME", "type": "home"},
		"actions":   []any{map[string]any{"type": "button", "action_id": actionID, "block_id": "home", "value": value}},
	})
}

// stepUpButton finds the URL button of a step-up message.
func stepUpButton(t *testing.T, blocksJSON json.RawMessage) (text, link string) {
	t.Helper()
	var blocks []struct {
		Elements []struct {
			Type string          `json:"type"`
			URL  string          `json:"url"`
			Text json.RawMessage `json:"text"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(blocksJSON, &blocks); err != nil {
		t.Fatalf("blocks: %v: %s", err, blocksJSON)
	}
	for _, b := range blocks {
		for _, el := range b.Elements {
			if el.Type == "button" && el.URL != "" {
				var label struct{ Text string }
				if err := json.Unmarshal(el.Text, &label); err != nil {
					t.Fatalf("button text: %v", err)
				}
				return label.Text, el.URL
			}
		}
	}
	return "", ""
}

// An Approve (or Approve for …, or Approve all) on a route that asks for
// step-up records nothing, leaves the card as it was, and answers the
// clicker alone with a single-use link bound to them and the calls:
// "Verify with your passkey" to PUBLIC_URL/step-up/<link id>, with its
// expiry.
func TestStepUpClickAnswersWithTheLink(t *testing.T) {
	for _, tc := range []struct {
		name, actionID string
		calls          []string
		grant          time.Duration
		always         bool
	}{
		{"approve", ActionIDApprove, []string{smCallID}, 0, false},
		{"approve for an hour", GrantActionID(time.Hour), []string{smCallID}, time.Hour, false},
		{"approve all", ActionIDApproveAll, []string{smCallID, "call_two"}, 0, false},
		{"approve and always allow", ActionIDApproveAlways, []string{smCallID}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newStepUpEnv(t, func(c *testConfig) { c.Routes.Routes[0].OfferAlwaysAllow = true })
			e.approvals.a.Origin = approval.Origin{Team: smTeam, Client: "billing", Name: "Claude Code (/home/dev/shop)"}
			e.approvals.a.Requests.Metadata = map[string]map[string]any{smCallID: {agentrunner.MetaAlwaysAllow: json.RawMessage(
				`{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test *"}],"behavior":"allow","destination":"localSettings"}`)}}
			e.passkeys.add(smTeam, smApprover, PasskeyInfo{ID: "cred-1", Name: "laptop", Method: routing.StepUpWebAuthn, Added: created})
			e.signedClick(t, clickPayload(smApprover, tc.actionID, EncodeAction(e.approvals.a.Token, smCallID)))
			e.settle()

			if d := e.decisions(); len(d) != 0 {
				t.Errorf("decisions recorded: %+v, want none", d)
			}
			if n := len(e.fake.Calls("chat.update")); n != 0 {
				t.Errorf("%d chat.update calls, want the card unchanged", n)
			}
			links := e.links.savedLinks()
			if len(links) != 1 {
				t.Fatalf("%d step-up links saved, want 1", len(links))
			}
			l := links[0]
			var ids []string
			for _, c := range l.Calls {
				ids = append(ids, c.CallID)
			}
			if l.User != smApprover || l.Team != smTeam || !slices.Equal(ids, tc.calls) || l.Grant != tc.grant || l.AlwaysAllow != tc.always {
				t.Errorf("link for %s/%s, calls %v, grant %v, always %v; want %s/%s, %v, %v, %v", l.Team, l.User, ids, l.Grant, l.AlwaysAllow, smTeam, smApprover, tc.calls, tc.grant, tc.always)
			}
			eph := e.fake.Ephemerals(smApprover)
			var found bool
			for _, m := range eph {
				text, link := stepUpButton(t, m.BlocksJSON)
				if link == "" {
					continue
				}
				found = true
				if want := testPublicURL + "/step-up/" + l.ID; text != "Verify with your passkey" || link != want {
					t.Errorf("button %q → %s, want \"Verify with your passkey\" → %s", text, link, want)
				}
				if !strings.Contains(string(m.BlocksJSON), "!date^"+strconv.FormatInt(l.Expires.Unix(), 10)+"^") {
					t.Errorf("the message does not give the link's expiry: %s", m.BlocksJSON)
				}
				if m.Channel != smCardChan {
					t.Errorf("answered in %s, want the card's channel", m.Channel)
				}
			}
			if !found {
				t.Errorf("no step-up message among %+v", eph)
			}
			if others := e.fake.Ephemerals(smStranger); len(others) != 0 {
				t.Errorf("someone else was told: %+v", others)
			}
		})
	}
}

// A person with no passkey is told so and offered "Add a passkey" (a
// registration link) instead of a link they could not use.
func TestStepUpWithoutPasskeyOffersRegistration(t *testing.T) {
	e := newStepUpEnv(t, nil)
	e.signedClick(t, clickPayload(smApprover, ActionIDApprove, EncodeAction(e.approvals.a.Token, smCallID)))
	e.settle()
	if d := e.decisions(); len(d) != 0 {
		t.Errorf("decisions recorded: %+v, want none", d)
	}
	eph := e.fake.Ephemerals(smApprover)
	if len(eph) != 1 {
		t.Fatalf("%d ephemerals, want 1", len(eph))
	}
	text, link := stepUpButton(t, eph[0].BlocksJSON)
	if text != "Add a passkey" || link != testPublicURL+"/passkeys/register/reg-"+smApprover {
		t.Errorf("button %q → %s, want Add a passkey → the registration link", text, link)
	}
	if !strings.Contains(string(eph[0].BlocksJSON), "no passkey registered") {
		t.Errorf("the message does not say there is no passkey: %s", eph[0].BlocksJSON)
	}
}

// Deny never needs step-up: it decides at once, and no link is made.
func TestStepUpDenyDecidesAtOnce(t *testing.T) {
	e := newStepUpEnv(t, nil)
	e.signedClick(t, clickPayload(smApprover, ActionIDDeny, EncodeAction(e.approvals.a.Token, smCallID)))
	e.settle()
	d := e.decisions()
	if len(d) != 1 || d[0].Action != approval.ActionDeny || d[0].By != smApprover {
		t.Errorf("decisions %+v, want smApprover's deny", d)
	}
	if n := len(e.links.savedLinks()); n != 0 {
		t.Errorf("%d step-up links made for a Deny", n)
	}
}

// Making the link is not on the acknowledgement's path: a store that
// takes seconds to save it, and a slow passkey list, leave the click
// acknowledged within the budget; the person is answered when they
// finish.
func TestStepUpAckWithinBudget(t *testing.T) {
	const budget = 300 * time.Millisecond
	e := newStepUpEnv(t, func(tc *testConfig) { tc.AckBudget = budget })
	e.links.stall = make(chan struct{})
	e.passkeys.listWait = make(chan struct{})
	e.passkeys.add(smTeam, smApprover, PasskeyInfo{ID: "cred-1", Added: created})
	_, took := e.signedClick(t, clickPayload(smApprover, ActionIDApprove, EncodeAction(e.approvals.a.Token, smCallID)))
	if took > budget {
		t.Errorf("acknowledged after %v, budget %v", took, budget)
	}
	time.Sleep(2 * budget) // past the budget: the answer still comes
	close(e.links.stall)
	close(e.passkeys.listWait)
	e.settle()
	eph := e.fake.Ephemerals(smApprover)
	if len(eph) != 1 {
		t.Fatalf("%d ephemerals, want the step-up message", len(eph))
	}
	if _, link := stepUpButton(t, eph[0].BlocksJSON); !strings.HasPrefix(link, testPublicURL+"/step-up/") {
		t.Errorf("link %q, want the step-up page", link)
	}
}

// Without step-up pages (no PUBLIC_URL), the click still records
// nothing, and the person is told why nothing happened.
func TestStepUpUnavailableSaysSo(t *testing.T) {
	e := newStepUpEnv(t, func(tc *testConfig) { tc.PublicURL = "" })
	e.signedClick(t, clickPayload(smApprover, ActionIDApprove, EncodeAction(e.approvals.a.Token, smCallID)))
	e.settle()
	if d := e.decisions(); len(d) != 0 {
		t.Errorf("decisions recorded: %+v, want none", d)
	}
	eph := e.fake.Ephemerals(smApprover)
	if len(eph) != 1 || !strings.Contains(string(eph[0].BlocksJSON), "PUBLIC_URL is not set") {
		t.Errorf("ephemerals %+v, want one saying step-up is not set up", eph)
	}
}

// The URL buttons only open their page: their click is acknowledged and
// says nothing.
func TestStepUpURLButtonClickIsQuiet(t *testing.T) {
	e := newStepUpEnv(t, nil)
	for _, id := range []string{ActionIDStepUpVerify, ActionIDPasskeyRegister} {
		e.signedClick(t, clickPayload(smApprover, id, ""))
	}
	e.settle()
	if eph := e.fake.Ephemerals(smApprover); len(eph) != 0 {
		t.Errorf("ephemerals %+v, want none", eph)
	}
}

// An approval with edited arguments steps up as a click does: nothing is
// recorded, the form closes, and the link, which holds the edit, is sent
// under the card.
func TestStepUpEditedArgumentsForm(t *testing.T) {
	e := newStepUpEnv(t, nil)
	e.passkeys.add(smTeam, smApprover, PasskeyInfo{ID: "cred-1", Added: created})
	payload := submitPayload(e.approvals.a.Token, smApprover, CallbackEditArgs, BlockIDEditArgs, ActionIDEditArgsInput, `{"order_id":"42","amount":5}`)
	w, _ := e.signedClick(t, payload)
	e.settle()
	if body := strings.TrimSpace(w.Body.String()); body != "" {
		t.Errorf("answer %s, want the form closed", body)
	}
	if d := e.decisions(); len(d) != 0 {
		t.Errorf("decisions recorded: %+v, want none", d)
	}
	links := e.links.savedLinks()
	if len(links) != 1 || !strings.Contains(string(links[0].OverrideArgs), `"amount":5`) {
		t.Fatalf("links %+v, want one holding the edit", links)
	}
	eph := e.fake.Ephemerals(smApprover)
	if len(eph) != 1 {
		t.Fatalf("%d ephemerals, want the step-up message", len(eph))
	}
	if _, link := stepUpButton(t, eph[0].BlocksJSON); link != testPublicURL+"/step-up/"+links[0].ID {
		t.Errorf("link %q, want the edit's link", link)
	}
}

// On App Home, which has no ephemeral messages, Approve opens a modal
// holding the link.
func TestStepUpFromHomeOpensModal(t *testing.T) {
	e := newStepUpEnv(t, nil)
	e.passkeys.add(smTeam, smApprover, PasskeyInfo{ID: "cred-1", Added: created})
	e.signedClick(t, homePayload(smApprover, ActionIDApprove, EncodeAction(e.approvals.a.Token, smCallID)))
	e.settle()
	if d := e.decisions(); len(d) != 0 {
		t.Errorf("decisions recorded: %+v, want none", d)
	}
	links := e.links.savedLinks()
	if len(links) != 1 || !links[0].Home {
		t.Fatalf("links %+v, want one from Home", links)
	}
	views := e.fake.Views()
	if len(views) != 1 {
		t.Fatalf("%d views opened, want the step-up modal", len(views))
	}
	if !strings.Contains(string(views[0].JSON), `"url":"`+testPublicURL+"/step-up/"+links[0].ID+`"`) {
		t.Errorf("modal %s does not hold the link", views[0].JSON)
	}
}

// App Home lists the person's passkeys; Remove removes the one named
// (Slack's confirm dialog came first) and republishes the Home without
// it; Add a passkey opens a modal holding a single-use registration link.
func TestHomePasskeysListRemoveAdd(t *testing.T) {
	e := newStepUpEnv(t, nil)
	e.passkeys.add(smTeam, smApprover, PasskeyInfo{ID: "cred-1", Name: "laptop", Added: created})
	e.passkeys.add(smTeam, smApprover, PasskeyInfo{ID: "cred-2", Name: "YubiKey", Added: created})
	if err := e.bot.PublishHome(t.Context(), smApprover, ""); err != nil {
		t.Fatal(err)
	}
	home, _ := e.fake.Home(smApprover)
	for _, want := range []string{"Your passkeys", "*laptop*", "*YubiKey*", `"value":"cred-1"`, `"action_id":"passkey_add"`} {
		if !strings.Contains(string(home.JSON), want) {
			t.Errorf("the Home does not show %q", want)
		}
	}

	e.signedClick(t, homePayload(smApprover, ActionIDPasskeyRemove, "cred-1"))
	e.settle()
	if want := []string{smTeam + "/" + smApprover + "/cred-1"}; !slices.Equal(e.passkeys.removed, want) {
		t.Errorf("removed %v, want %v", e.passkeys.removed, want)
	}
	home, _ = e.fake.Home(smApprover)
	if strings.Contains(string(home.JSON), "*laptop*") || !strings.Contains(string(home.JSON), "Passkey removed") {
		t.Errorf("the Home after Remove: %s", home.JSON)
	}

	// Another person's click names only their own passkeys.
	e2 := newStepUpEnv(t, nil)
	e2.passkeys.add(smTeam, smApprover, PasskeyInfo{ID: "cred-1", Added: created})
	e2.signedClick(t, homePayload(smStranger, ActionIDPasskeyRemove, "cred-1"))
	e2.settle()
	if len(e2.passkeys.removed) != 0 {
		t.Errorf("a stranger removed %v", e2.passkeys.removed)
	}

	e.signedClick(t, homePayload(smApprover, ActionIDPasskeyAdd, "add"))
	e.settle()
	views := e.fake.Views()
	if len(views) != 1 || !strings.Contains(string(views[0].JSON), `"url":"`+testPublicURL+`/passkeys/register/reg-`+smApprover+`"`) {
		t.Errorf("views %+v, want the registration modal", views)
	}
}
