package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
	"github.com/slackapprove/slackbot/store/redistest"
)

// The fault tests break what slackbot depends on — Redis, its own
// process, Slack, the network between them, the requests it gets — in the
// middle of a flow, and check the guarantees of docs/ARCHITECTURE.md
// ("Guarantees and where they are enforced") still hold. Each is bounded
// by the waits it uses.

// cardCall returns the token and call id a card's Approve button carries.
func cardCall(t *testing.T, m slackfake.Message) (token, callID string) {
	t.Helper()
	token, callID, err := bot.DecodeAction(button(t, m, bot.ActionIDApprove).Value)
	if err != nil {
		t.Fatalf("card %s: %v", m.TS, err)
	}
	return token, callID
}

// counterValue reads a Prometheus counter.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// decisionsCounted is slackbot_decisions_total for outcome, summed over
// the routes.
func decisionsCounted(t *testing.T, m *metrics, outcome string) float64 {
	t.Helper()
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != "slackbot_decisions_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					sum += s.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// waitUntil polls cond until it holds, failing the test after timeout. It
// bounds a wait; it asserts nothing about speed.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Redis crashes (SIGKILL) in the middle of a run's approvals and comes back
// from its append-only file: every decision acknowledged before the crash
// is still recorded, a click while Redis is down is told it was not
// recorded (and is not), and the run finishes once the rest are decided,
// each approved tool running once.
func TestRedisCrashLosesNoAcknowledgedDecision(t *testing.T) {
	t.Parallel()
	rs := redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "always")
	// While Redis is down a command fails after a short dial timeout and a
	// few quick retries, rather than go-redis' defaults.
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr(), DialTimeout: 300 * time.Millisecond, MaxRetryBackoff: 100 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	e := newEnv(t, envOptions{model: burstModel(10), redis: rdb})
	thread := e.mention(carol, general, "delete them all")
	cards := e.waitCards(10)
	token, _ := cardCall(t, cards[0])

	for _, c := range cards[:5] {
		if got := e.click(alice, c, bot.ActionIDApprove); got != http.StatusOK {
			t.Fatalf("click before the crash: got status %d", got)
		}
	}
	// Let the cards' updates finish first: an update cut off by the crash
	// would keep its card's lease until it expires (30s), and the run's
	// answer, posted after the cards show the outcomes, would wait for it.
	// An update ends when it frees the lease, just after Slack has the
	// new card: on a loaded host the crash could fall in between.
	for i, c := range cards[:5] {
		_, id := cardCall(t, c)
		lease := e.prefix + "lock:card:" + token + ":" + id
		e.waitFor(fmt.Sprintf("card %d to show the approval and its update to end", i), func() bool {
			return strings.Contains(cardText(e.latest(c)), "Approved") && rdb.Exists(t.Context(), lease).Val() == 0
		})
	}
	rs.Kill(t)

	// Slack gets its 200, but the person is told nothing was recorded.
	if got := e.click(alice, cards[5], bot.ActionIDApprove); got != http.StatusOK {
		t.Fatalf("click while Redis is down: got status %d, want 200 with an explanation", got)
	}
	e.waitFor("Alice to be told her click was not recorded", func() bool { return len(e.ephemeralsFor(alice)) == 1 })
	if got := e.ephemeralsFor(alice)[0]; !strings.Contains(got, "nothing changed") {
		t.Errorf("ephemeral %q does not say nothing changed", got)
	}

	rs.Restart(t)
	var rec *approval.Request
	waitUntil(t, 20*time.Second, "Redis to answer again", func() bool {
		var err error
		rec, err = e.app.store.Get(t.Context(), token)
		return err == nil
	})
	for i, c := range cards {
		_, id := cardCall(t, c)
		cs := rec.Call(id)
		if cs == nil {
			t.Fatalf("call %s of card %d is gone after the restart", id, i)
		}
		want := approval.CallPending
		if i < 5 {
			want = approval.CallApproved
		}
		if cs.Status != want {
			t.Errorf("after the restart, call %s (card %d) is %s, want %s", id, i, cs.Status, want)
		}
	}

	for _, c := range cards[5:] {
		if got := e.click(alice, c, bot.ActionIDApprove); got != http.StatusOK {
			t.Fatalf("click after the restart: got status %d", got)
		}
	}
	waitUntil(t, 30*time.Second, "the run's answer", func() bool { return len(e.replies(general, thread)) > 0 })
	if got := e.replies(general, thread); len(got) != 1 || got[0] != "done" {
		t.Errorf("thread answers: got %q, want [done]", got)
	}
	assertEachDeletedOnce(t, e, 10)
	if got := e.ephemeralsFor(alice); len(got) != 1 {
		t.Errorf("Alice got %d ephemerals, want only the one about the outage: %q", len(got), got)
	}
}

// assertEachDeletedOnce checks that delete_customer ran exactly once for
// each of c000..c<n-1>, and for nothing else.
func assertEachDeletedOnce(t *testing.T, e *env, n int) {
	t.Helper()
	runs := map[string]int{}
	for _, raw := range e.tools.Runs("delete_customer") {
		var a customerArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		runs[a.CustomerID]++
	}
	for i := range n {
		id := fmt.Sprintf("c%03d", i)
		if runs[id] != 1 {
			t.Errorf("delete_customer(%s) ran %d times, want 1", id, runs[id])
		}
		delete(runs, id)
	}
	if len(runs) > 0 {
		t.Errorf("delete_customer ran for calls nobody approved: %v", runs)
	}
}

// slackbot is killed with SIGKILL while 100 approvals wait; another start
// of it gets every click (half approve, half deny): each click resolves,
// each run answers once, each approved file is deleted (once: a second
// deletion would fail and answer again) and no denied one is.
func TestSIGKILLWithHundredPendingApprovals(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts processes")
	}
	const n = 100
	c := newCluster(t, durableRoutes)
	c.env = append(c.env, "MODEL=demo") // "delete the file f007" calls delete_file(f007)
	for i := range n {
		if err := os.WriteFile(filepath.Join(c.sandbox, fmt.Sprintf("f%03d", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := c.start("A")
	threads := make([]string, n)
	for i := range n {
		threads[i] = c.mentionText(a, fmt.Sprintf("delete the file f%03d", i))
	}
	e := &env{t: t, slack: c.slack}
	waitUntil(t, 60*time.Second, "100 approval cards", func() bool { return len(e.cards()) >= n })
	cards := e.cards()
	a.kill(t)

	b := c.start("B")
	fileOf := regexp.MustCompile(`the file "(f\d{3})"`)
	approved := map[string]bool{}
	for _, card := range cards {
		m := fileOf.FindStringSubmatch(card.Text)
		if m == nil {
			t.Fatalf("card %q names no file", card.Text)
		}
		action := bot.ActionIDDeny
		if i := m[1]; (i[3]-'0')%2 == 0 {
			action, approved[i] = bot.ActionIDApprove, true
		}
		postSigned(t, b.base+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, "T0FAKE", card, action))
	}

	answered := func() int {
		k := 0
		for _, th := range threads {
			if len(e.replies(general, th)) > 0 {
				k++
			}
		}
		return k
	}
	waitUntil(t, 90*time.Second, "every run to answer", func() bool { return answered() == n })
	time.Sleep(500 * time.Millisecond) // a second resumption would answer again
	for i, th := range threads {
		name := fmt.Sprintf("f%03d", i)
		got := e.replies(general, th)
		if len(got) != 1 {
			t.Errorf("%s: got %d answers, want exactly 1: %q", name, len(got), got)
			continue
		}
		_, statErr := os.Stat(filepath.Join(c.sandbox, name))
		if approved[name] {
			if want := "Done: deleted " + name; got[0] != want {
				t.Errorf("%s: answer %q, want %q", name, got[0], want)
			}
			if statErr == nil {
				t.Errorf("%s was approved but still exists", name)
			}
		} else {
			if !strings.HasPrefix(got[0], "I did not run delete_file") {
				t.Errorf("%s: answer %q, want a denial", name, got[0])
			}
			if statErr != nil {
				t.Errorf("%s was denied but is gone: %v", name, statErr)
			}
		}
	}
}

// mentionText posts "<@bot> text" as Carol in #general and sends its signed
// app_mention to p; it returns the thread.
func (c *cluster) mentionText(p *proc, text string) string {
	c.t.Helper()
	full := "<@" + c.slack.BotUserID() + "> " + text
	msg, err := c.slack.PostAsUser(general, carol, full, "")
	if err != nil {
		c.t.Fatal(err)
	}
	body := slacktest.Mention{Team: testTeam, User: carol, Channel: general, Text: full, TS: msg.TS}.Body()
	postSigned(c.t, p.base+"/slack/events", slacktest.JSONContentType, body)
	return msg.TS
}

// lateSlack makes the next calls of one Slack method time out: each waits
// until the client gives up, and every other one has taken effect first,
// as when Slack acted and the answer was lost on the way back.
type lateSlack struct {
	next   http.Handler
	method string
	left   atomic.Int32
	acted  atomic.Int32
	missed atomic.Int32
}

func (l *lateSlack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/"+l.method) || l.left.Add(-1) < 0 {
		l.next.ServeHTTP(w, r)
		return
	}
	if l.left.Load()%2 == 0 {
		l.next.ServeHTTP(httptest.NewRecorder(), r)
		l.acted.Add(1)
	} else {
		// Read the request, so the server notices when the client hangs up.
		_, _ = io.Copy(io.Discard, r.Body)
		l.missed.Add(1)
	}
	select {
	case <-r.Context().Done(): // the client timed out and hung up
	case <-time.After(10 * time.Second):
	}
}

// chain lets a test install its middleware after newEnv built the fake.
type chain struct {
	mu   sync.Mutex
	wrap func(http.Handler) http.Handler
	next http.Handler
}

func (c *chain) middleware(next http.Handler) http.Handler {
	c.next = next
	return c
}

func (c *chain) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	h := c.next
	if c.wrap != nil {
		h = c.wrap(c.next)
	}
	c.mu.Unlock()
	h.ServeHTTP(w, r)
}

func (c *chain) set(h http.Handler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wrap = func(http.Handler) http.Handler { return h }
}

// Slack calls that time out — with Slack having acted or not — are
// retried, and nothing is lost or posted twice: cards posted through
// timeouts of chat.postMessage, and cards updated after clicks through
// timeouts, 500s and 429s of chat.update.
func TestSlackTimeoutsLoseNothingAndDuplicateNothing(t *testing.T) {
	t.Parallel()
	t.Run("chat.postMessage", func(t *testing.T) {
		var ch chain
		e := newEnv(t, envOptions{
			model: burstModel(12), sleepOnClock: true, slackMiddleware: ch.middleware,
			retry: bot.Retry{AttemptTimeout: 300 * time.Millisecond},
		})
		late := &lateSlack{next: ch.next, method: "chat.postMessage"}
		late.left.Store(4)
		ch.set(late)
		thread := e.mention(carol, general, "delete them all")
		cards := e.waitCards(12)
		if late.acted.Load() != 2 || late.missed.Load() != 2 {
			t.Fatalf("timed out %d posts that acted and %d that did not, want 2 and 2", late.acted.Load(), late.missed.Load())
		}
		for _, c := range cards {
			e.click(alice, c, bot.ActionIDApprove)
		}
		e.waitReply(general, thread)
		if got := e.cards(); len(got) != 12 {
			t.Fatalf("got %d cards, want 12", len(got))
		}
		for i, c := range e.cards() {
			if want := fmt.Sprintf("c%03d", i); !strings.Contains(cardText(c), want) {
				t.Errorf("card %d does not show %s: lost, out of order or duplicated", i, want)
			}
		}
		assertEachDeletedOnce(t, e, 12)
	})

	t.Run("chat.update after clicks", func(t *testing.T) {
		var ch chain
		e := newEnv(t, envOptions{
			model: burstModel(6), sleepOnClock: true, slackMiddleware: ch.middleware,
			retry: bot.Retry{AttemptTimeout: 300 * time.Millisecond},
		})
		thread := e.mention(carol, general, "delete them all")
		cards := e.waitCards(6)
		late := &lateSlack{next: ch.next, method: "chat.update"}
		late.left.Store(4)
		ch.set(late)
		e.slack.FailNext("chat.update", http.StatusInternalServerError, 3)
		e.slack.RateLimit("chat.update", 1, time.Second)
		for _, c := range cards {
			if got := e.click(alice, c, bot.ActionIDApprove); got != http.StatusOK {
				t.Fatalf("click: got status %d", got)
			}
		}
		if got := e.waitReply(general, thread); got != "done" {
			t.Errorf("answer %q, want done", got)
		}
		for i, c := range cards {
			e.waitFor(fmt.Sprintf("card %d to show the approval and the outcome", i), func() bool {
				text := cardText(e.latest(c))
				return strings.Contains(text, "Approved") && strings.Contains(text, fmt.Sprintf("deleted c%03d", i))
			})
		}
		if got := len(e.cards()); got != 6 {
			t.Errorf("got %d cards, want 6", got)
		}
		if n := len(e.slack.Messages(approvalsCh)); n != 6 {
			t.Errorf("got %d messages in #approvals, want the 6 cards only", n)
		}
		limited, failed := 0, 0
		for _, c := range e.slack.Calls("chat.update") {
			switch c.Status {
			case http.StatusTooManyRequests:
				limited++
			case http.StatusInternalServerError:
				failed++
			}
		}
		if limited == 0 || failed != 3 || late.acted.Load()+late.missed.Load() != 4 {
			t.Errorf("faults injected: %d 429s, %d 500s, %d timeouts; want some, 3 and 4", limited, failed, late.acted.Load()+late.missed.Load())
		}
		if got := e.ephemeralsFor(alice); len(got) != 0 {
			t.Errorf("Alice was told %q", got)
		}
		assertEachDeletedOnce(t, e, 6)
	})
}

// replica starts a second slackbot on e's Redis, prefix and fake Slack, as
// another process of the same deployment would be, and returns its URL.
func (e *env) replica(owner string) (*app, string) {
	e.t.Helper()
	d := e.app.deps
	d.Owner = owner
	a, err := newApp(e.t.Context(), d)
	if err != nil {
		e.t.Fatal(err)
	}
	srv := serveApp(e.t, a, "replica's events subscriber")
	return a, srv.URL
}

// Clicks racing on two replicas — Alice approving and Bob denying each
// card, each on both replicas at once, Alice twice — decide every call
// once: one decision counted across the replicas, the approved tools run
// once, the denied ones never, one answer.
func TestClicksRacingOnTwoReplicasDecideOnce(t *testing.T) {
	t.Parallel()
	const n = 20
	e := newEnv(t, envOptions{model: burstModel(n)})
	other, otherURL := e.replica("replica-b")
	thread := e.mention(carol, general, "delete them all")
	cards := e.waitCards(n)

	send := func(base, user string, card slackfake.Message, action string) {
		body := e.clickPayload(user, testTeam, card, action)
		resp, err := slacktest.Post(t.Context(), base+"/slack/interactivity", slacktest.FormContentType, body, testSecret, time.Now())
		if err != nil {
			t.Error(err)
			return
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("click on %s: got status %d", base, resp.StatusCode)
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, card := range cards {
		for _, base := range []string{e.srv.URL, otherURL} {
			wg.Go(func() { <-start; send(base, alice, card, bot.ActionIDApprove) })
			wg.Go(func() { <-start; send(base, alice, card, bot.ActionIDApprove) })
			wg.Go(func() { <-start; send(base, bob, card, bot.ActionIDDeny) })
		}
	}
	close(start)
	wg.Wait()
	waitUntil(t, 30*time.Second, "the run's answer", func() bool { return len(e.replies(general, thread)) > 0 })

	decided := 0.0
	for _, a := range []*app{e.app, other} {
		for _, outcome := range []string{"approved", "denied"} {
			decided += decisionsCounted(t, a.metrics, outcome)
		}
	}
	if decided != n {
		t.Errorf("the replicas recorded %v decisions, want %d (one per call)", decided, n)
	}
	token, _ := cardCall(t, cards[0])
	rec, err := e.app.store.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, c := range rec.Calls {
		switch {
		case c.Status == approval.CallApproved && c.DecidedBy == alice:
		case c.Status == approval.CallDenied && c.DecidedBy == bob:
		default:
			t.Errorf("call %s ended %s by %q", c.ID, c.Status, c.DecidedBy)
		}
		if c.Status == approval.CallApproved {
			var args customerArgs
			call, _ := rec.Requests.Call(c.ID)
			if err := json.Unmarshal(call.Args, &args); err != nil {
				t.Fatal(err)
			}
			want[args.CustomerID] = 1
		}
	}
	got := map[string]int{}
	for _, raw := range e.tools.Runs("delete_customer") {
		var a customerArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		got[a.CustomerID]++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tool runs %v, want once per approved call %v", got, want)
	}
	time.Sleep(300 * time.Millisecond) // a second resumption would answer again
	if got := e.replies(general, thread); len(got) != 1 {
		t.Errorf("got %d answers, want 1: %q", len(got), got)
	}
}

// Oversized, truncated and malformed bodies, and signed requests replayed
// inside Slack's five-minute window, get a clear answer and change nothing
// twice; every request gets an HTTP answer (a panic would drop the
// connection instead).
func TestHostileRequestsGetClearAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	thread := e.mention(carol, general, "delete customer a")
	card := e.waitCards(1)[0]

	form := slacktest.FormContentType
	payload := func(v any) []byte {
		b, _ := json.Marshal(v)
		return slacktest.Form(b)
	}
	click := e.clickPayload(alice, testTeam, card, bot.ActionIDApprove)
	for _, tc := range []struct {
		name, path, contentType string
		body                    []byte
		want                    int
		says                    string
	}{
		{"oversized", "/slack/interactivity", form, append([]byte("payload="), make([]byte, bot.MaxSlackBody)...), http.StatusRequestEntityTooLarge, "too large"},
		{"bad form encoding", "/slack/interactivity", form, []byte("payload=%zz"), http.StatusBadRequest, "malformed form"},
		{"no payload", "/slack/interactivity", form, []byte("other=1"), http.StatusBadRequest, "missing payload"},
		{"payload not JSON", "/slack/interactivity", form, []byte("payload=%7Bnot+json"), http.StatusBadRequest, "malformed payload"},
		// Cut anywhere: in the JSON, or in the middle of a %XX escape.
		{"truncated payload", "/slack/interactivity", form, click[:len(click)/2], http.StatusBadRequest, "malformed"},
		{"no user", "/slack/interactivity", form, payload(map[string]any{"type": "block_actions", "actions": []any{map[string]any{"action_id": "approve"}}}), http.StatusBadRequest, "no user"},
		{"no action", "/slack/interactivity", form, payload(map[string]any{"type": "block_actions", "user": map[string]any{"id": alice}}), http.StatusBadRequest, "no action"},
		{"wrong JSON types", "/slack/interactivity", form, payload(map[string]any{"type": "block_actions", "user": "alice", "actions": 5}), http.StatusBadRequest, "malformed payload"},
		{"forged button value", "/slack/interactivity", form, payload(map[string]any{"type": "block_actions", "user": map[string]any{"id": alice},
			"team": map[string]any{"id": testTeam}, "channel": map[string]any{"id": approvalsCh},
			"actions": []any{map[string]any{"action_id": "approve", "block_id": bot.BlockIDActions, "value": "1.not-a-token.call"}}}), http.StatusOK, ""},
		{"unknown interaction", "/slack/interactivity", form, payload(map[string]any{"type": "shortcut", "user": map[string]any{"id": alice}}), http.StatusOK, ""},
		{"event not JSON", "/slack/events", "application/json", []byte(`{"type":`), http.StatusBadRequest, "malformed event"},
		{"event of the wrong shape", "/slack/events", "application/json", []byte(`{"type":"event_callback","event":[1,2]}`), http.StatusBadRequest, "malformed event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.post(tc.path, tc.contentType, tc.body, time.Now(), testSecret)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want || !strings.Contains(string(b), tc.says) {
				t.Errorf("got %d %q, want %d saying %q", resp.StatusCode, b, tc.want, tc.says)
			}
		})
	}

	t.Run("truncated body", func(t *testing.T) {
		// The client promises more bytes than it sends, then stops writing.
		conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		h := http.Header{}
		bot.SignSlackRequest(h, testSecret, time.Now(), click)
		fmt.Fprintf(conn, "POST /slack/interactivity HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\nX-Slack-Signature: %s\r\nX-Slack-Request-Timestamp: %s\r\n\r\n",
			form, len(click), h.Get("X-Slack-Signature"), h.Get("X-Slack-Request-Timestamp"))
		_, _ = conn.Write(click[:len(click)/2])
		_ = conn.(*net.TCPConn).CloseWrite()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no HTTP answer to a truncated body: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("got status %d, want 400", resp.StatusCode)
		}
	})

	// Nothing above decided anything.
	assertUndecided(t, e, card)

	// A signed click replayed within the window decides once; a replayed
	// event starts one run.
	signedAt := time.Now()
	for range 3 {
		if resp := e.post("/slack/interactivity", form, click, signedAt, testSecret); resp.StatusCode != http.StatusOK {
			t.Fatalf("click: got status %d", resp.StatusCode)
		}
	}
	if got := e.waitReply(general, thread); got != `{"delete_customer":"deleted a"}` {
		t.Errorf("answer %q", got)
	}
	if n := len(e.tools.Runs("delete_customer")); n != 1 {
		t.Errorf("tool ran %d times, want 1", n)
	}
	if got := decisionsCounted(t, e.app.metrics, "approved"); got != 1 {
		t.Errorf("%v decisions recorded, want 1", got)
	}
	event := slacktest.Mention{
		Team: testTeam, EventID: "EvREPLAYED", User: carol, Channel: general,
		Text: "<@" + e.slack.BotUserID() + "> delete customer b", TS: "1.000001",
	}.Body()
	for range 3 {
		if resp := e.post("/slack/events", slacktest.JSONContentType, event, signedAt, testSecret); resp.StatusCode != http.StatusOK {
			t.Fatalf("event: got status %d", resp.StatusCode)
		}
	}
	e.waitCards(2)
	time.Sleep(200 * time.Millisecond) // a second run would post a third card
	if n := len(e.cards()); n != 2 {
		t.Errorf("got %d cards, want 2: a replayed event started another run", n)
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(e.replies(general, thread)); n != 1 {
		t.Errorf("got %d answers, want 1", n)
	}
}
