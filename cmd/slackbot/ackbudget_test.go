package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/store/redistest"
)

// TestClickWithFrozenRedisDecidesNothing: Redis stops answering (a proxy
// holds every byte) while an approver clicks. The click is acknowledged
// anyway, the approver is told that nothing was recorded, and once Redis
// answers again (the held commands arrive late) nothing was decided: the
// card keeps its buttons and the tool did not run.
func TestClickWithFrozenRedisDecidesNothing(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	// Socket timeouts far beyond the budget: only the click's deadline can
	// end its wait for Redis.
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	e := newEnv(t, envOptions{redis: rdb})
	t.Cleanup(proxy.Thaw) // before the app shuts down, should the test fail frozen
	e.mention(alice, general, "delete customer a")
	card := e.waitCards(1)[0]

	proxy.Freeze()
	status := make(chan int, 1)
	go func() { status <- e.click(bob, card, bot.ActionIDApprove) }()
	select {
	case got := <-status:
		if got != http.StatusOK {
			t.Fatalf("click: status %d, want 200", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the click was not acknowledged while Redis was frozen")
	}
	proxy.Thaw()
	<-proxy.Late()
	e.waitFor("bob's explanation", func() bool { return len(e.ephemeralsFor(bob)) == 1 })
	if msg := e.ephemeralsFor(bob)[0]; !strings.Contains(msg, "could not record your click in time") || !strings.Contains(msg, "nothing changed") {
		t.Errorf("bob was told %q, want that his click was not recorded and nothing changed", msg)
	}
	assertUndecided(t, e, card)
	token, _ := cardCall(t, card)
	rec, err := e.app.store.Get(t.Context(), token)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rec.Calls {
		if c.Status != "pending" {
			t.Errorf("call %s after the frozen click: %s, want pending", c.ID, c.Status)
		}
	}

	// Redis is back: the same click decides.
	if got := e.click(bob, card, bot.ActionIDApprove); got != http.StatusOK {
		t.Fatalf("click: status %d, want 200", got)
	}
	e.waitFor("the tool to run", func() bool { return len(e.tools.Runs("delete_customer")) == 1 })
}
