package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/approval"
)

// Long polls wait on the process's one subscription: while hundreds of
// them wait, none holds a Redis connection, and one click answers all.
func TestLongPollsHoldNoRedisConnection(t *testing.T) {
	const polls = 500
	spy := &spyWaiter{waiting: make(chan string, polls)}
	e := newEnv(t, envOptions{waiter: spy})
	a := e.create(keyBilling, deletion("lp", "/tmp/lp", nil))
	card := e.card(a.Token, "lp")

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: polls}}
	t.Cleanup(client.CloseIdleConnections)
	type answer struct {
		status string
		err    error
		at     time.Time
	}
	answers := make(chan answer, polls)
	for range polls {
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.srv.URL+"/v1/approvals/"+a.Token+"?wait=60s", nil)
			req.Header.Set("Authorization", "Bearer "+keyBilling)
			resp, err := client.Do(req)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var v struct{ Status string }
			if err := json.Unmarshal(b, &v); err != nil || resp.StatusCode != http.StatusOK {
				answers <- answer{err: fmt.Errorf("status %d: %s", resp.StatusCode, b)}
				return
			}
			answers <- answer{status: v.Status, at: time.Now()}
		}()
	}
	for i := range polls {
		select {
		case <-spy.waiting:
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d long polls started waiting", i, polls)
		}
	}
	// Give the last waiters their one look at the token, then count the
	// connections in use: the long polls hold none.
	e.waitFor("the long polls to settle", func() bool {
		st := e.store.Client().PoolStats()
		return st.TotalConns-st.IdleConns <= 1
	})
	st := e.store.Client().PoolStats()
	t.Logf("%d long polls waiting; Redis pool: %d connections, %d idle", polls, st.TotalConns, st.IdleConns)

	sent := time.Now()
	e.click(alice, card, approval.ActionApprove)
	var last time.Time
	for range polls {
		got := <-answers
		if got.err != nil {
			t.Fatalf("long poll: %v", got.err)
		}
		if got.status != "resolved" {
			t.Fatalf("long poll: got status %q, want resolved", got.status)
		}
		if got.at.After(last) {
			last = got.at
		}
	}
	t.Logf("click sent → all %d long polls answered: %v", polls, last.Sub(sent))
}

// Closing the API (the server shuts down) answers the long polls at once
// with the request as it stands, so they do not hold the shutdown.
func TestCloseAnswersLongPolls(t *testing.T) {
	spy := &spyWaiter{waiting: make(chan string, 1)}
	e := newEnv(t, envOptions{waiter: spy})
	a := e.create(keyBilling, deletion("cl", "/tmp/cl", nil))
	type answer struct {
		status string
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.srv.URL+"/v1/approvals/"+a.Token+"?wait=60s", nil)
		req.Header.Set("Authorization", "Bearer "+keyBilling)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var v struct{ Status string }
		err = json.NewDecoder(resp.Body).Decode(&v)
		answered <- answer{status: v.Status, err: err}
	}()
	select {
	case <-spy.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll never started waiting")
	}
	e.api.Close()
	e.api.Close() // idempotent: the server may call it twice
	select {
	case got := <-answered:
		if got.err != nil || got.status != "pending" {
			t.Errorf("long poll after Close: status %q, err %v; want the request as it stands (pending)", got.status, got.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not answer the long poll (it would hold the shutdown for up to a minute)")
	}
}
