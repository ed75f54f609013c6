package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
)

// chaosCounts is what the soak prints.
type chaosCounts struct {
	runs, cards, approved, denied, pending                int
	attempts, acked, refused, failed, uncertain, ackWrong int
	toolRuns, closed, lost, deniedAnswers, wrongAnswers   int
	answeredOnce, unanswered, answeredTwice, withButtons  int
	auditDecided, auditMissing, auditTwice, auditWrong    int
	took                                                  time.Duration
	// told counts the ephemerals the clickers got, by their first words.
	told map[string]int
}

func (c chaosCounts) String() string {
	return fmt.Sprintf(`chaos soak counts
  runs %d, cards %d: approved %d, denied %d, still pending %d
  clicks sent %d: acknowledged decisions %d (not applied as acknowledged: %d), refused or unconfirmed %d, failed (no 200) %d, uncertain (the process died right after answering) %d
  tool runs %d: approved runs answered with its result %d, approved runs told its outcome was lost %d; denied runs answered %d, runs answered wrongly %d
  threads answered once %d, unanswered %d, answered more than once %d; cards still with buttons %d
  audit decided events %d: calls without one %d, with more than one %d, not matching the record %d
  ephemerals by kind: %v
  took %s`,
		c.runs, c.cards, c.approved, c.denied, c.pending,
		c.attempts, c.acked, c.ackWrong, c.refused, c.failed, c.uncertain,
		c.toolRuns, c.closed, c.lost, c.deniedAnswers, c.wrongAnswers,
		c.answeredOnce, c.unanswered, c.answeredTwice, c.withButtons,
		c.auditDecided, c.auditMissing, c.auditTwice, c.auditWrong, c.told, c.took.Round(time.Millisecond))
}

// check waits (bounded) for every run to answer and every card to lose
// its buttons, then counts and asserts the soak's promises.
func (s *soak) check(cards []slackfake.Message, threads []string) chaosCounts {
	t := s.t
	t.Helper()
	e := &env{t: t, slack: s.c.slack}
	settled := func() bool {
		for _, th := range threads {
			if len(e.replies(general, th)) == 0 {
				return false
			}
		}
		for _, card := range cards {
			if strings.Contains(cardText(e.latest(card)), `"type":"actions"`) {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(60 * time.Second)
	for !settled() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // a second answer or update would show by now
	recs := s.records(cards)
	c := chaosCounts{runs: len(threads), cards: len(cards), toolRuns: int(s.tool.calls.Load()), told: map[string]int{}}
	s.checkDecisions(&c, cards, recs)
	s.checkAnswers(&c, e, cards, recs, threads)
	s.checkAudit(&c, cards, recs)
	return c
}

// checkDecisions counts the records' states and checks every
// acknowledged click against the record of its call.
func (s *soak) checkDecisions(c *chaosCounts, cards []slackfake.Message, recs []*approval.Request) {
	t := s.t
	for i, rec := range recs {
		_, id := cardCall(t, cards[i])
		switch rec.Call(id).Status {
		case approval.CallApproved:
			c.approved++
		case approval.CallDenied:
			c.denied++
		default:
			c.pending++
			t.Errorf("card %d: call %s ended %s, want approved or denied", i, id, rec.Call(id).Status)
		}
	}
	byUser := map[string][]*attempt{}
	for _, a := range s.attempts {
		byUser[a.user] = append(byUser[a.user], a)
	}
	for user, as := range byUser {
		slices.SortFunc(as, func(a, b *attempt) int { return a.sent.Compare(b.sent) })
		eph := s.c.slack.Ephemerals(user)
		for _, m := range eph {
			c.told[firstWords(m.Text, 6)]++
		}
		for j, a := range as {
			c.attempts++
			next := time.Now()
			if j+1 < len(as) {
				next = as[j+1].sent
			}
			switch s.verdict(a, eph, next) {
			case "failed":
				c.failed++
			case "uncertain":
				c.uncertain++
			case "refused":
				c.refused++
			case "acked":
				c.acked++
				_, id := cardCall(t, cards[a.card])
				call := recs[a.card].Call(id)
				want := approval.CallApproved
				if a.action == bot.ActionIDDeny {
					want = approval.CallDenied
				}
				if call.Status != want || call.DecidedBy != user {
					c.ackWrong++
					t.Errorf("card %d: %s's %s was acknowledged at %s, but the call is %s by %q",
						a.card, user, a.action, a.answered.Format(time.StampMilli), call.Status, call.DecidedBy)
				}
			}
		}
	}
}

// verdict says what became of click a, whose person's next click was
// sent at next: "failed" (no 200), "uncertain" (the process was killed
// within 3s of answering, so it may have died before it could say the
// click did not count), "refused" (an ephemeral said it did not count)
// or "acked" (no complaint, or a later "Your click was recorded"); a
// later "could not confirm" is "uncertain" too.
func (s *soak) verdict(a *attempt, eph []slackfake.Ephemeral, next time.Time) string {
	if a.err != nil || a.status != 200 {
		return "failed"
	}
	if k := s.killedAt(a.proc); !k.IsZero() && k.After(a.sent) && k.Sub(a.answered) < 3*time.Second {
		return "uncertain"
	}
	verdict := "acked"
	for _, m := range eph {
		if m.Posted.Before(a.sent) || !m.Posted.Before(next) {
			continue
		}
		switch {
		case strings.HasPrefix(m.Text, "Your click was recorded"):
			return "acked"
		case strings.HasPrefix(m.Text, "slackbot could not confirm in time whether your click was recorded"):
			// slackbot said it could not find out: the card, which shows
			// the decision, is the person's answer. (This text also holds
			// "was recorded", which the check once took for a confirmation.)
			return "uncertain"
		}
		verdict = "refused"
	}
	return verdict
}

// checkAnswers checks every run answered once, as its decision says, the
// tool ran once per approved run, and no card kept its buttons.
func (s *soak) checkAnswers(c *chaosCounts, e *env, cards []slackfake.Message, recs []*approval.Request, threads []string) {
	t := s.t
	status := map[string]approval.CallStatus{}
	for i, rec := range recs {
		_, id := cardCall(t, cards[i])
		status[rec.Origin.ThreadTS] = rec.Call(id).Status
		if strings.Contains(cardText(e.latest(cards[i])), `"type":"actions"`) {
			c.withButtons++
			t.Errorf("card %d still has buttons: %s", i, cardText(e.latest(cards[i])))
		}
	}
	for _, th := range threads {
		answers := e.replies(general, th)
		switch len(answers) {
		case 0:
			c.unanswered++
			t.Errorf("thread %s: no answer (call %s)", th, status[th])
			continue
		case 1:
			c.answeredOnce++
		default:
			c.answeredTwice++
			t.Errorf("thread %s: %d answers: %q", th, len(answers), answers)
		}
		closed, lost := answers[0] == closedAnswer, strings.Contains(answers[0], "may have run")
		switch st := status[th]; {
		case st == approval.CallApproved && closed:
			c.closed++
		case st == approval.CallApproved && lost:
			c.lost++
		case st == approval.CallDenied && !closed && !lost:
			c.deniedAnswers++
		default:
			c.wrongAnswers++
			t.Errorf("thread %s: the call is %s, the answer %q", th, st, answers[0])
		}
	}
	// A run whose process died while its tool ran is told the outcome was
	// lost; its tool ran at most once.
	if c.toolRuns < c.closed || c.toolRuns > c.closed+c.lost || c.closed+c.lost != c.approved {
		t.Errorf("the tool ran %d times for %d approved calls (%d answered with its result, %d told it may have run)",
			c.toolRuns, c.approved, c.closed, c.lost)
	}
}

// checkAudit checks the audit stream (read from the current primary)
// has exactly one decided event per call, matching the record.
func (s *soak) checkAudit(c *chaosCounts, cards []slackfake.Message, recs []*approval.Request) {
	t := s.t
	evs, err := s.st.Client(t).XRange(t.Context(), "slackbot:audit", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	decided := map[string][]map[string]any{}
	for _, ev := range evs {
		if ev.Values["type"] == "decided" {
			c.auditDecided++
			key := fmt.Sprint(ev.Values["token"], "/", ev.Values["call"])
			decided[key] = append(decided[key], ev.Values)
		}
	}
	for i, rec := range recs {
		token, id := cardCall(t, cards[i])
		got := decided[token+"/"+id]
		switch {
		case len(got) == 0:
			c.auditMissing++
			t.Errorf("card %d: no decided audit event", i)
			continue
		case len(got) > 1:
			c.auditTwice++
			t.Errorf("card %d: %d decided audit events: %v", i, len(got), got)
		}
		call := rec.Call(id)
		if got[0]["decision"] != string(call.Status) || got[0]["by"] != call.DecidedBy {
			c.auditWrong++
			t.Errorf("card %d: audit says %v by %v, the record %s by %s", i, got[0]["decision"], got[0]["by"], call.Status, call.DecidedBy)
		}
	}
}

// firstWords returns the first n words of text.
func firstWords(text string, n int) string {
	w := strings.Fields(text)
	return strings.Join(w[:min(n, len(w))], " ")
}
