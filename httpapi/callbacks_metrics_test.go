package httpapi_test

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/httpapi"
)

// callbackCounts records what CallbacksConfig.Metrics is told.
type callbackCounts struct {
	mu      sync.Mutex
	results []string
}

func (c *callbackCounts) Callback(result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.results = append(c.results, result)
}

func (c *callbackCounts) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.results)
}

// Each attempt is counted once by how it ended: a failure with attempts
// left as retried, one without as failed, a 2xx as delivered, and an
// attempt slackbot will not make (a callback URL that is not public) as
// refused.
func TestCallbackResultsCounted(t *testing.T) {
	e := newEnv(t, envOptions{})
	// The env's own consumer delivers the cancellation first (the first
	// request, answered 200); the attempts made here get the others.
	statuses := []int{http.StatusOK, http.StatusInternalServerError, http.StatusBadGateway, http.StatusOK}
	rc := newReceiver(t, keyBilling, nil, func(n int, _ *http.Request) int {
		if n > len(statuses) {
			t.Errorf("attempt %d: more than expected", n)
			return http.StatusOK
		}
		return statuses[n-1]
	})
	a := e.create(keyBilling, deletion("cb1", "/tmp/a", map[string]any{"callback_url": rc.srv.URL + "/cb"}))
	if resp := e.do(request{key: keyBilling, method: http.MethodDelete, path: "/v1/approvals/" + a.Token}); resp.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", resp.status, resp.body)
	}
	for deadline := time.Now().Add(10 * time.Second); len(rc.deliveries(a.Token)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the env's consumer never delivered the cancellation")
		}
	}
	keys, err := httpapi.ParseKeys(testKeys)
	if err != nil {
		t.Fatal(err)
	}
	counts := &callbackCounts{}
	cfg := httpapi.CallbacksConfig{
		Keys: keys, Store: e.store, Queue: nopQueue{}, Consumer: "counter", AllowPrivate: true, Now: e.clock.Now,
		Attempts: 2, Metrics: counts,
	}
	cbs := httpapi.NewCallbacks(cfg)
	for attempt := 1; attempt <= 2; attempt++ {
		cbs.Deliver(t.Context(), approval.CallbackJob{Token: a.Token, State: approval.StateCancelled, Attempt: attempt})
	}
	cbs.Deliver(t.Context(), approval.CallbackJob{Token: a.Token, State: approval.StateCancelled, Attempt: 1})
	cfg.AllowPrivate = false // the receiver is on loopback
	httpapi.NewCallbacks(cfg).Deliver(t.Context(), approval.CallbackJob{Token: a.Token, State: approval.StateCancelled, Attempt: 1})

	want := []string{httpapi.CallbackResultRetried, httpapi.CallbackResultFailed, httpapi.CallbackResultDelivered, httpapi.CallbackResultRefused}
	if got := counts.got(); !slices.Equal(got, want) {
		t.Errorf("counted %v; want %v", got, want)
	}
	if n := len(rc.deliveries(a.Token)); n != 4 {
		t.Errorf("the receiver got %d requests; want 4, the env's and 3 (none to a URL that is not public)", n)
	}
}
