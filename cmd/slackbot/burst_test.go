package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/bot"
)

// burstModel calls delete_customer n times in one response, then reports.
func burstModel(n int) agentrunner.FunctionModel {
	return func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		last := msgs[len(msgs)-1]
		for _, p := range last.Parts {
			if p.PartKind == agentrunner.PartToolReturn {
				return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("done")}}, nil
			}
		}
		var parts []agentrunner.Part
		for i := range n {
			args, _ := json.Marshal(customerArgs{CustomerID: fmt.Sprintf("c%03d", i)})
			parts = append(parts, agentrunner.ToolCall("delete_customer", args, fmt.Sprintf("call_%03d", i)))
		}
		return agentrunner.Message{Parts: parts}, nil
	}
}

// A burst of 200 pending calls to one channel, against a Slack that lets
// one message a second through and answers 429 with Retry-After, is posted
// completely, in order, with no duplicates.
func TestBurstOf200UnderRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{model: burstModel(200), sleepOnClock: true})
	e.slack.RateLimit("chat.postMessage", 1, time.Second)
	e.mention(carol, general, "delete them all")
	cards := e.waitCards(200)
	if len(cards) != 200 {
		t.Fatalf("got %d cards, want 200", len(cards))
	}
	for i, c := range cards {
		want := fmt.Sprintf(`c%03d`, i)
		if !strings.Contains(cardText(c), want) {
			t.Fatalf("card %d does not show %s: out of order or duplicated", i, want)
		}
	}
	limited := 0
	for _, c := range e.slack.Calls("chat.postMessage") {
		if c.Status == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Error("the fake never rate-limited: the test proves nothing")
	}
	t.Logf("200 cards posted through %d rate-limited attempts", limited)
	// Each 429 is counted as a rate limit; none of the posts failed.
	fams := scrape(t, e.srv.URL)
	post := map[string]string{"method": bot.MethodPostMessage}
	if m := series(fams["slackbot_slack_api_rate_limited_total"], post); m == nil || value(m) != float64(limited) {
		t.Errorf("slackbot_slack_api_rate_limited_total%v: got %v, want %d", post, m, limited)
	}
	if m := series(fams["slackbot_slack_api_errors_total"], post); m == nil || value(m) != 0 {
		t.Errorf("slackbot_slack_api_errors_total%v: got %v, want 0: a 429 waited out is not a failed call", post, m)
	}
}

// Slack answering 500, rate-limiting, and acting on a post whose response
// is then lost: every card is posted exactly once, in order.
func TestPostingSurvivesSlackFaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{model: burstModel(30), sleepOnClock: true})
	e.slack.RateLimit("chat.postMessage", 5, time.Second)
	e.slack.FailNext("chat.postMessage", http.StatusInternalServerError, 3)
	e.slack.LoseResponseNext("chat.postMessage", 4)
	thread := e.mention(carol, general, "delete them all")
	// Every card is recorded against its call, so clicks work on all of
	// them; once the run has answered, all posting is over.
	for _, c := range e.waitCards(30) {
		e.click(alice, c, "approve")
	}
	if got := e.waitReply(general, thread); got != "done" {
		t.Errorf("got answer %q, want done", got)
	}
	cards := e.cards()
	if len(cards) != 30 {
		t.Fatalf("got %d cards, want 30", len(cards))
	}
	for i, c := range cards {
		if want := fmt.Sprintf(`c%03d`, i); !strings.Contains(cardText(c), want) {
			t.Fatalf("card %d does not show %s: out of order or duplicated", i, want)
		}
	}
	if n := len(e.tools.Runs("delete_customer")); n != 30 {
		t.Errorf("tool ran %d times, want 30", n)
	}
}
