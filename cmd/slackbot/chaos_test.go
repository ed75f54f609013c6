package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
	"github.com/slackapprove/slackbot/store/redistest"
)

// The chaos soak (issue 18): a Redis primary, one replica and three
// Sentinels; two slackbot processes on the Sentinel URL with
// REDIS_WAIT_REPLICAS=1; a fake Slack that rate-limits, fails and is slow
// now and then; 200 runs waiting for approval and clicks racing on both
// processes while the primary is SIGKILLed (a replica is promoted), one
// slackbot process is SIGKILLed and restarted, and Redis's connections
// are cut. At the end no acknowledged decision is lost or doubled: see
// chaosCheck.

const (
	chaosRuns = 200
	// chaosClickers is the number of people who click each card: two
	// approve (one through each process), one denies.
	chaosClickers = 3
)

// soak is the state of one chaos run.
type soak struct {
	t     *testing.T
	c     *cluster
	st    *redistest.Sentinel
	tool  *crashTool
	procs [2]atomic.Pointer[proc]
	// killed is when each process (by pointer) was SIGKILLed.
	mu       sync.Mutex
	killed   map[*proc]time.Time
	attempts []*attempt
	// clicking is the number of people still clicking.
	clicking atomic.Int32
}

// chaosUser is the id of the k-th person who clicks card i.
func chaosUser(i, k int) string { return fmt.Sprintf("U0CH%03dK%d", i, k) }

// chaosRoutes lets every clicker of every card decide.
func chaosRoutes(toolURL string) string {
	var users []string
	for i := range chaosRuns {
		for k := range chaosClickers {
			users = append(users, chaosUser(i, k))
		}
	}
	return `
routes:
  - name: tickets
    channel: C0APPROVALS
    approvers: {users: [` + strings.Join(users, ", ") + `]}
    timeout: 1h
mcp_servers:
  - name: tickets
    url: ` + toolURL + "\n"
}

// startSoak starts the topology, the processes and the faults.
func startSoak(t *testing.T) *soak {
	t.Helper()
	st := redistest.StartSentinel(t, redistest.SentinelOptions{})
	tool := newCrashTool(t)
	c := newClusterOn(t, chaosRoutes(tool.srv.URL), st.URL())
	c.env = append(c.env, "MODEL=test:tickets__close_ticket", "TOOLS=", "LOG_LEVEL=info", "REDIS_WAIT_REPLICAS=1")
	for i := range chaosRuns {
		for k := range chaosClickers {
			c.slack.AddUser(slackfake.User{ID: chaosUser(i, k), Name: strings.ToLower(chaosUser(i, k))})
		}
	}
	s := &soak{t: t, c: c, st: st, tool: tool, killed: map[*proc]time.Time{}}
	s.procs[0].Store(c.start("A"))
	s.procs[1].Store(c.start("B"))
	// Slack lets 30 posts and 30 updates a second through per channel
	// (429 with Retry-After for the others), fails every 17th post and
	// every 13th update with a 500, and answers every 11th update and
	// every 29th post 2s late.
	c.slack.RateLimit("chat.postMessage", 30, time.Second)
	c.slack.RateLimit("chat.update", 30, time.Second)
	c.slack.FailEvery("chat.postMessage", http.StatusInternalServerError, 17)
	c.slack.FailEvery("chat.update", http.StatusInternalServerError, 13)
	c.slack.SlowEvery("chat.update", 2*time.Second, 11)
	c.slack.SlowEvery("chat.postMessage", 2*time.Second, 29)
	return s
}

// mentions starts the runs, alternating between the processes, and
// returns their threads.
func (s *soak) mentions() []string {
	s.t.Helper()
	threads := make([]string, chaosRuns)
	var wg sync.WaitGroup
	next := atomic.Int32{}
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < chaosRuns; i = int(next.Add(1) - 1) {
				threads[i] = s.mention(s.procs[i%2].Load(), fmt.Sprintf("close ticket %d", i))
			}
		})
	}
	wg.Wait()
	return threads
}

// mention is cluster.mentionText, safe in any goroutine.
func (s *soak) mention(p *proc, text string) string {
	full := "<@" + s.c.slack.BotUserID() + "> " + text
	msg, err := s.c.slack.PostAsUser(general, carol, full, "")
	if err != nil {
		s.t.Error(err)
		return ""
	}
	body := slacktest.Mention{Team: testTeam, User: carol, Channel: general, Text: full, TS: msg.TS}.Body()
	resp, err := slacktest.Post(s.t.Context(), p.base+"/slack/events", slacktest.JSONContentType, body, testSecret, time.Now())
	if err != nil || resp.StatusCode != http.StatusOK {
		s.t.Errorf("mention %q: %v %v", text, resp, err)
	}
	return msg.TS
}

// kill SIGKILLs the process in slot and notes when.
func (s *soak) kill(slot int) {
	s.t.Helper()
	p := s.procs[slot].Load()
	s.mu.Lock()
	s.killed[p] = time.Now()
	s.mu.Unlock()
	p.kill(s.t)
}

// killedAt returns when p was killed, or the zero time.
func (s *soak) killedAt(p *proc) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killed[p]
}

// chaos is the sequence of failures, run while the clicks go on: Redis's
// connections cut, the primary SIGKILLed and a replica promoted (the
// connections cut again), the old primary back as a replica, slackbot B
// SIGKILLed and restarted, the connections cut a third time.
func (s *soak) chaos() {
	t := s.t
	time.Sleep(time.Second)
	s.cut(s.st.Primary(t))
	time.Sleep(time.Second)
	old := s.st.KillPrimary(t)
	primary := s.st.WaitFailover(t, old)
	t.Logf("chaos: primary %s killed, %s promoted (%d people clicking)", old.Addr(), primary.Addr(), s.clicking.Load())
	s.cut(primary)
	// Without a replica WAIT 1 confirms nothing: the old primary comes
	// back and the Sentinels make it the new primary's replica.
	old.Restart(t)
	s.st.WaitRejoined(t, old, primary)
	t.Logf("chaos: %s back as a replica (%d people clicking)", old.Addr(), s.clicking.Load())
	s.kill(1)
	time.Sleep(300 * time.Millisecond)
	s.procs[1].Store(s.c.start("B restarted"))
	t.Logf("chaos: slackbot B killed and restarted (%d people clicking)", s.clicking.Load())
	s.cut(primary)
}

// cut closes every normal client connection of server.
func (s *soak) cut(server *redistest.Server) {
	t := s.t
	t.Helper()
	rdb := server.Client(t)
	n, err := rdb.ClientKillByFilter(t.Context(), "TYPE", "normal").Result()
	if err != nil && !strings.Contains(err.Error(), "EOF") {
		t.Errorf("CLIENT KILL TYPE normal: %v", err)
	}
	t.Logf("chaos: cut %d connections of %s (%d people clicking)", n, server.Addr(), s.clicking.Load())
}

func TestChaosSoak(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Redis, Sentinels and slackbot processes")
	}
	cpuTurn(t)
	began := time.Now()
	s := startSoak(t)
	threads := s.mentions()
	e := &env{t: t, slack: s.c.slack}
	waitUntil(t, 90*time.Second, fmt.Sprintf("%d cards", chaosRuns), func() bool { return len(e.cards()) >= chaosRuns })
	cards := e.cards()
	t.Logf("%d runs wait for approval after %s", len(cards), time.Since(began).Round(time.Millisecond))

	// The clickers stop when the test ends, failed or not, before the
	// processes are killed.
	ctx, cancel := context.WithCancel(context.Background())
	clicked := make(chan struct{})
	go func() { defer close(clicked); s.clickAll(ctx, cards) }()
	t.Cleanup(func() { cancel(); <-clicked })
	s.chaos()
	<-clicked
	s.sweep(cards)
	counts := s.check(cards, threads)
	counts.took = time.Since(began)
	table := counts.String()
	t.Log("\n" + table)
	fmt.Fprintln(os.Stdout, table)
}
