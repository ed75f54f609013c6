package bot

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slackfaketest"
)

// TestConcurrentClicksOnAColdCacheMakeOneLookup: six people click at once
// on a card whose route names a usergroup nobody has looked up yet:
// usergroups.users.list is called once, and every click is answered.
func TestConcurrentClicksOnAColdCacheMakeOneLookup(t *testing.T) {
	e := newClickEnv(t, "finance", nil)
	// Slow enough that every click arrives while the lookup is in flight.
	e.fake.Delay("usergroups.users.list", 200*time.Millisecond)
	clickers := []string{smApprover, smApprover, smStranger, smRequester, smStranger, smApprover}

	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, user := range clickers {
		wg.Go(func() {
			<-start
			payload := clickPayload(user, ActionIDApprove, EncodeAction(e.approvals.a.Token, smCallID))
			r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/slack/interactivity",
				strings.NewReader(url.Values{"payload": {string(payload)}}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			w := httptest.NewRecorder()
			e.bot.HandleInteraction().ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				t.Errorf("click by %s: status %d", user, w.Code)
			}
		})
	}
	close(start)
	wg.Wait()
	e.settle()

	if n := len(e.fake.Calls("usergroups.users.list")); n != 1 {
		t.Errorf("usergroups.users.list calls: got %d, want 1", n)
	}
	if got := e.state(); got != approval.CallApproved {
		t.Errorf("call state: got %s, want approved (by the group's member)", got)
	}
	for _, user := range []string{smStranger, smRequester} {
		for _, msg := range e.ephemerals(user) {
			if !strings.Contains(msg, "not an approver") {
				t.Errorf("%s was told %q, want that they are not an approver", user, msg)
			}
		}
		if len(e.ephemerals(user)) == 0 {
			t.Errorf("%s, not a member, was told nothing", user)
		}
	}
}

// testClock is a clock tests move by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newTestUsergroups returns a Usergroups over a fake Slack sharing clock,
// whose usergroup smGroup has the member smApprover.
func newTestUsergroups(t *testing.T, clock *testClock) (*Usergroups, *slackfake.Server) {
	t.Helper()
	fake, ts := slackfaketest.NewTestServer(t, slackfake.WithClock(clock.Now),
		slackfake.WithUsers(slackfake.User{ID: smApprover, Name: "alice"}, slackfake.User{ID: smStranger, Name: "mallory"}),
		slackfake.WithUsergroups(slackfake.Usergroup{ID: smGroup, Handle: "finance", Members: []string{smApprover}},
			slackfake.Usergroup{ID: "S0OTHER", Handle: "other", Members: []string{smStranger}}))
	a := &Usergroups{
		Slack: slack.New(fake.Token(), slack.OptionAPIURL(slackfaketest.APIURL(ts))),
		TTL:   time.Minute, MaxStale: 10 * time.Minute, Now: clock.Now,
		Sleep: func(_ context.Context, d time.Duration) error { clock.Add(d); return nil },
	}
	t.Cleanup(a.Wait)
	return a, fake
}

// cancelled is a context that has ended: a lookup that would have to wait
// fails at once.
func cancelled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}

// TestStaleMembersAreServedWhileRefreshed: past TTL, members are served at
// once (even to a caller that cannot wait at all) while one background
// lookup refreshes them; past TTL+MaxStale a caller waits for the lookup.
func TestStaleMembersAreServedWhileRefreshed(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	a, fake := newTestUsergroups(t, clock)
	if got, err := a.Members(t.Context(), smGroup); err != nil || !slices.Equal(got, []string{smApprover}) {
		t.Fatalf("first lookup: got %v, %v", got, err)
	}
	fake.AddUsergroup(slackfake.Usergroup{ID: smGroup, Handle: "finance", Members: []string{smApprover, smStranger}})

	clock.Add(2 * time.Minute) // stale
	for i := range 3 {
		got, err := a.Members(cancelled(t), smGroup)
		// The first stale read starts the refresh; a later one may find
		// it done already, and then gets the new members.
		fresh := i > 0 && slices.Equal(got, []string{smApprover, smStranger})
		if err != nil || !slices.Equal(got, []string{smApprover}) && !fresh {
			t.Fatalf("stale read %d: got %v, %v; want the cached members at once (or, after the first, the refreshed ones)", i+1, got, err)
		}
	}
	a.Wait()
	if n := len(fake.Calls("usergroups.users.list")); n != 2 {
		t.Errorf("usergroups.users.list calls: got %d, want 2 (one refresh for three stale reads)", n)
	}
	if got, err := a.Members(cancelled(t), smGroup); err != nil || !slices.Equal(got, []string{smApprover, smStranger}) {
		t.Errorf("after the refresh: got %v, %v; want the new members", got, err)
	}

	clock.Add(20 * time.Minute) // too old to serve
	if _, err := a.Members(cancelled(t), smGroup); !errors.Is(err, context.Canceled) {
		t.Errorf("members far past TTL with a caller that cannot wait: got %v, want its context's error", err)
	}
	if got, err := a.Members(t.Context(), smGroup); err != nil || len(got) != 2 {
		t.Errorf("members far past TTL: got %v, %v; want a fresh lookup", got, err)
	}
}

// TestRateLimitedLookupsHonourRetryAfter: a 429 stops lookups until its
// Retry-After has passed, stale members are served meanwhile, and a cold
// usergroup waits out a short Retry-After once instead of failing.
func TestRateLimitedLookupsHonourRetryAfter(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	a, fake := newTestUsergroups(t, clock)
	fake.RateLimit("usergroups.users.list", 1, 10*time.Minute)
	if _, err := a.Members(t.Context(), smGroup); err != nil {
		t.Fatal(err)
	}
	clock.Add(2 * time.Minute)
	if got, err := a.Members(t.Context(), smGroup); err != nil || len(got) != 1 {
		t.Fatalf("stale members: got %v, %v", got, err)
	}
	a.Wait() // the refresh got a 429 (Retry-After 8 minutes)
	calls := len(fake.Calls("usergroups.users.list"))
	if calls != 2 {
		t.Fatalf("usergroups.users.list calls: got %d, want 2 (the first and a refused refresh)", calls)
	}

	clock.Add(5 * time.Minute) // still limited; members 7 minutes old
	for range 3 {
		if got, err := a.Members(t.Context(), smGroup); err != nil || len(got) != 1 {
			t.Errorf("members while rate limited: got %v, %v; want the stale ones", got, err)
		}
	}
	if _, err := a.Members(t.Context(), "S0OTHER"); !errors.Is(err, errUsergroupsRateLimited) {
		t.Errorf("a cold usergroup while rate limited: got %v, want errUsergroupsRateLimited", err)
	}
	a.Warm(smGroup, "S0OTHER")
	a.Wait()
	if n := len(fake.Calls("usergroups.users.list")); n != calls {
		t.Errorf("usergroups.users.list calls while rate limited: got %d, want none after the 429", n-calls)
	}

	clock.Add(4 * time.Minute) // past Retry-After and the fake's window
	if got, err := a.Members(t.Context(), "S0OTHER"); err != nil || !slices.Equal(got, []string{smStranger}) {
		t.Errorf("after Retry-After: got %v, %v", got, err)
	}

	// A short Retry-After on a cold usergroup is waited out once.
	b, fake2 := newTestUsergroups(t, clock)
	fake2.RateLimit("usergroups.users.list", 1, time.Second)
	if _, err := b.Members(t.Context(), smGroup); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Members(t.Context(), "S0OTHER"); err != nil || !slices.Equal(got, []string{smStranger}) {
		t.Errorf("cold usergroup behind a 1 s Retry-After: got %v, %v; want its members after one wait", got, err)
	}
	if n := len(fake2.Calls("usergroups.users.list")); n != 3 {
		t.Errorf("usergroups.users.list calls: got %d, want 3 (one, a 429, the retry)", n)
	}
}

// Create records nothing: the click of TestPostingACardWarmsItsUsergroups
// goes to the fixture's own request.
func (r *recordingApprovals) Create(context.Context, *approval.Request) error { return nil }

// TestPostingACardWarmsItsUsergroups: the members of a route's usergroups
// are looked up when its card is posted, so the first click finds them.
func TestPostingACardWarmsItsUsergroups(t *testing.T) {
	e := newClickEnv(t, "finance", nil)
	_, err := e.bot.svc.Open(t.Context(), approval.Opening{
		Token: agentrunner.NewToken(), Origin: approval.Origin{Client: "support"}, Route: "finance",
		Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
			{ToolName: "issue_refund", Args: []byte(`{"amount":5}`), ToolCallID: "r1"},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.settle()
	calls := e.fake.Calls("usergroups.users.list")
	if len(calls) != 1 || calls[0].Params["usergroup"] != smGroup {
		t.Fatalf("usergroups.users.list calls after posting the card: got %+v, want one for %s", calls, smGroup)
	}
	e.click(t, smApprover, ActionIDApprove)
	e.settle()
	if n := len(e.fake.Calls("usergroups.users.list")); n != 1 {
		t.Errorf("usergroups.users.list calls after the click: got %d, want still 1", n)
	}
	if got := e.state(); got != approval.CallApproved {
		t.Errorf("call state: got %s, want approved", got)
	}
}
