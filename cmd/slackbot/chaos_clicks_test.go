package main

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/internal/slacktest"
	"github.com/slackapprove/slackbot/store"
)

// attempt is one click the soak sent. Whether it was acknowledged as a
// decision is found out at the end (see acknowledged): a click is
// answered 200 whatever happens, and a person learns that their click did
// not count from an ephemeral message that follows.
type attempt struct {
	card     int
	user     string
	action   string
	proc     *proc
	sent     time.Time
	answered time.Time
	status   int
	err      error
}

// chaosClickWindow bounds how long the clickers keep at it.
const chaosClickWindow = 60 * time.Second

// clickAll starts the clickers of every card, a card every 50ms, so the
// clicks span the failures; each person retries until told the call is
// decided or their click raised no complaint.
func (s *soak) clickAll(ctx context.Context, cards []slackfake.Message) {
	deadline := time.Now().Add(chaosClickWindow)
	var wg sync.WaitGroup
	for i, card := range cards {
		wg.Go(func() { s.clickUntilDone(ctx, i, card, chaosUser(i, 0), bot.ActionIDApprove, 0, deadline) })
		wg.Go(func() { s.clickUntilDone(ctx, i, card, chaosUser(i, 1), bot.ActionIDApprove, 1, deadline) })
		wg.Go(func() { s.clickUntilDone(ctx, i, card, chaosUser(i, 2), bot.ActionIDDeny, i%2, deadline) })
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	wg.Wait()
}

// clickUntilDone is one person clicking action on card through the
// process in slot, then the other, until a click is not complained about
// (it counted, or it will be seen at the end that it did not) or they are
// told someone decided.
func (s *soak) clickUntilDone(ctx context.Context, i int, card slackfake.Message, user, action string, slot int, deadline time.Time) {
	btn, ok := slacktest.Button(card, action)
	if !ok {
		return
	}
	body := slacktest.Form(slacktest.Click{Team: testTeam, User: user, Message: card, Button: btn}.Payload())
	s.clicking.Add(1)
	defer s.clicking.Add(-1)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		p := s.procs[slot].Load()
		slot ^= 1
		a := &attempt{card: i, user: user, action: action, proc: p, sent: time.Now()}
		s.mu.Lock()
		s.attempts = append(s.attempts, a)
		s.mu.Unlock()
		before := len(s.c.slack.Ephemerals(user))
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := slacktest.Post(cctx, p.base+"/slack/interactivity", slacktest.FormContentType, body, testSecret, time.Now())
		cancel()
		a.answered, a.err = time.Now(), err
		if err == nil {
			a.status = resp.StatusCode
		}
		if err != nil || a.status != 200 {
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		text, told := s.waitEphemeral(ctx, user, before, 2*time.Second)
		if !told || strings.Contains(text, "already") || strings.Contains(text, "was recorded") {
			return
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

// waitEphemeral waits up to d for user's ephemeral number n+1.
func (s *soak) waitEphemeral(ctx context.Context, user string, n int, d time.Duration) (string, bool) {
	end := time.Now().Add(d)
	for ctx.Err() == nil && time.Now().Before(end) {
		if got := s.c.slack.Ephemerals(user); len(got) > n {
			return got[n].Text, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "", false
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// records reads the call of every card from Redis (the current primary).
func (s *soak) records(cards []slackfake.Message) []*approval.Request {
	s.t.Helper()
	st := store.New(s.st.Client(s.t), store.Options{})
	recs := make([]*approval.Request, len(cards))
	for i, card := range cards {
		token, _ := cardCall(s.t, card)
		rec, err := st.Get(s.t.Context(), token)
		if err != nil {
			s.t.Fatalf("card %d: %v", i, err)
		}
		recs[i] = rec
	}
	return recs
}

// sweep clicks again, as the people would, what is still undecided once
// the clickers stopped: a click that raised no complaint at the time may
// have been told later that it was not recorded. Bounded.
func (s *soak) sweep(cards []slackfake.Message) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for round := 0; time.Now().Before(deadline); round++ {
		var wg sync.WaitGroup
		pending := 0
		for i, rec := range s.records(cards) {
			_, id := cardCall(s.t, cards[i])
			if rec.Call(id).Status != approval.CallPending {
				continue
			}
			pending++
			wg.Go(func() {
				s.clickUntilDone(s.t.Context(), i, cards[i], chaosUser(i, round%2), bot.ActionIDApprove, round%2, deadline)
			})
		}
		wg.Wait()
		if pending == 0 {
			return
		}
		s.t.Logf("sweep %d: %d calls were still pending", round+1, pending)
		time.Sleep(500 * time.Millisecond)
	}
}
