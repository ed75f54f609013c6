package runs

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

type holdRecorder struct {
	Threads
	mu    sync.Mutex
	holds []time.Duration
}

func (h *holdRecorder) Hold(_ context.Context, _ ThreadRef, runID string, ttl time.Duration) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holds = append(h.holds, ttl)
	return runID == "r1", nil
}

// TestWaitingRunHoldsItsThread: a run that hands calls to people holds its
// thread until the token's deadline (and a while after, for the expiry to
// resume it), not just the heartbeat's lease: a run parked in Redis, with
// no process holding it, keeps its thread.
func TestWaitingRunHoldsItsThread(t *testing.T) {
	rec := &holdRecorder{}
	rs := &Runs{Threads: rec}
	deps := &Deps{Origin: approval.Origin{Team: "T1", Channel: "C1", ThreadTS: "1.2", User: "U1"}}
	if _, ok := rs.bind(t.Context(), deps, "r1"); !ok {
		t.Fatal("a run with a thread does not hold it")
	}
	deps.Waits(time.Now().Add(time.Hour))
	if len(rec.holds) != 1 || rec.holds[0] < time.Hour || rec.holds[0] > time.Hour+threadWaitSlack {
		t.Errorf("holds: got %v, want one of about 1h + %v", rec.holds, threadWaitSlack)
	}
	// A run with no thread (an API run) holds none.
	api := &Deps{Origin: approval.Origin{Client: "billing"}}
	if _, ok := rs.bind(t.Context(), api, "r2"); ok {
		t.Error("a run with no thread holds one")
	}
	api.Waits(time.Now().Add(time.Hour))
	if len(rec.holds) != 1 {
		t.Errorf("holds after an API run waited: %v", rec.holds)
	}
}

// noHistory is a Threads that keeps no history for any thread.
type noHistory struct{ Threads }

func (noHistory) History(context.Context, ThreadRef) ([]agentrunner.Message, error) {
	return nil, ErrNoThreadHistory
}

// TestFreshStartFromTheMessageAlone: a reply in a thread no history is
// kept for starts from the thread as the chat shows it, and when the chat
// cannot show it, from the new message alone, never failing the run.
func TestFreshStartFromTheMessageAlone(t *testing.T) {
	shown := []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("<@U0DAVE> wrote: a refund on A-1001")}}}
	chat := &fakeChat{trail: &trail{}, thread: shown}
	rs := &Runs{Chat: chat, Threads: noHistory{}, BotUserID: "U0BOT"}
	th := ThreadRef{Team: "T1", Channel: "C0GENERAL", TS: "1.1"}
	reply := Turn{Origin: approval.Origin{Team: "T1", Channel: "C0GENERAL", ThreadTS: "1.1", User: "U0CAROL"}, MessageTS: "1.5", InThread: true}

	if got := rs.history(t.Context(), th, reply); len(got) != 1 || !strings.Contains(got[0].Parts[0].Content, "A-1001") {
		t.Fatalf("a thread the chat shows: got %+v, want its first message", got)
	}
	if got, want := chat.trail.String(), "read thread C0GENERAL/1.1 before 1.5"; got != want {
		t.Errorf("read: got %s, want %s", got, want)
	}
	chat.threadErr = errDown
	if got := rs.history(t.Context(), th, reply); got != nil {
		t.Errorf("a thread the chat cannot show: got %+v, want no history (the message alone)", got)
	}
	// A message that starts its thread reads nothing from the chat.
	chat.trail.reset()
	if got := rs.history(t.Context(), th, Turn{Origin: reply.Origin, MessageTS: "1.1"}); got != nil {
		t.Errorf("a new thread: got %+v, want no history", got)
	}
	if got := chat.trail.String(); got != "" {
		t.Errorf("a new thread read the chat: %s", got)
	}
}

// turnGate is a Threads whose Enter answers with err, or else nil: the
// turn waits behind a running one.
type turnGate struct {
	Threads
	err error
}

func (g turnGate) Enter(context.Context, ThreadRef, Turn, time.Duration) (*Turn, error) {
	return nil, g.err
}

// TestTurnThatWaitsOrIsRefused: a message that waits for its thread's
// running turn is told so in the thread and starts nothing; one the
// thread's full queue refuses is told to ask again later.
func TestTurnThatWaitsOrIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"waits", nil, queuedText},
		{"refused", fmt.Errorf("enter: %w", ErrThreadBusy), busyText},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chat := &fakeChat{trail: &trail{}}
			rs := &Runs{Chat: chat, Threads: turnGate{err: tt.err}}
			rs.StartTurn(Turn{Prompt: "refund A-1", Origin: testOrigin})
			rs.Wait()
			want := fmt.Sprintf("post %s/%s %q", testOrigin.Channel, testOrigin.ThreadTS, tt.want)
			if got := chat.trail.String(); got != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}
