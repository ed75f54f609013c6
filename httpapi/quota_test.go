package httpapi_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/httpapi"
)

func deletions(n int) map[string]any {
	return deletion(fmt.Sprint("c", n), fmt.Sprint("/tmp/", n), nil)
}

func wantRateLimited(t *testing.T, resp response, maxWait time.Duration) {
	t.Helper()
	if resp.status != http.StatusTooManyRequests || resp.apiError(t).Error.Code != httpapi.CodeRateLimited {
		t.Fatalf("got %d %s, want 429 rate_limited", resp.status, resp.body)
	}
	secs, err := strconv.Atoi(resp.header.Get("Retry-After"))
	if err != nil || secs < 1 || time.Duration(secs)*time.Second > maxWait {
		t.Errorf("Retry-After %q, want whole seconds in [1, %s]", resp.header.Get("Retry-After"), maxWait)
	}
}

// API_MAX_OPEN bounds the requests a key has open at once: beyond it,
// 429 rate_limited with Retry-After and nothing created; a request that
// ends frees its place. Other keys have their own.
func TestQuotaMaxOpen(t *testing.T) {
	e := newEnv(t, envOptions{maxOpen: 3, rate: -1})
	var open []approvalJSON
	for i := range 3 {
		open = append(open, e.create(keyBilling, deletions(i)))
	}
	cards := e.poster.CardsIn(approvals_)
	resp := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals", body: deletions(3)})
	wantRateLimited(t, resp, 10*time.Second)
	if n := e.poster.CardsIn(approvals_); n != cards {
		t.Errorf("a refused request posted %d cards", n-cards)
	}
	e.create(keySupport, deletions(4))

	// Cancelling one frees its place.
	if e.do(request{key: keyBilling, method: http.MethodDelete, path: "/v1/approvals/" + open[0].Token}).status != http.StatusOK {
		t.Fatal("cancel failed")
	}
	e.create(keyBilling, deletions(5))
	wantRateLimited(t, e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals", body: deletions(6)}), 10*time.Second)
}

// API_RATE bounds creates per second per key, with bursts of twice the
// rate; the 429 says when to retry. Refused creates take no open place.
func TestQuotaRate(t *testing.T) {
	e := newEnv(t, envOptions{rate: 1})
	for i := range 2 {
		e.create(keyBilling, deletions(i))
	}
	resp := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals", body: deletions(2)})
	wantRateLimited(t, resp, time.Second)
	e.create(keySupport, deletions(3))
	e.clock.Add(time.Second)
	e.create(keyBilling, deletions(4))
}
