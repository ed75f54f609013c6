package httpapi_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/httpapi"
)

type observedKey struct{}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Observe is told of each attempt (with its job, trace context included)
// and of how it ended, and the attempt's request is made in the context
// it returns, through the transport WrapTransport wraps (slackbot traces
// callbacks with the two).
func TestCallbackObserveAndWrapTransport(t *testing.T) {
	e := newEnv(t, envOptions{})
	var (
		mu   sync.Mutex
		seen []string
	)
	rc := newReceiver(t, keyBilling, func(_ http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		if v := r.Header.Get("X-Observed"); v != "" {
			seen = append(seen, v)
		}
		return false
	}, func(int, *http.Request) int { return http.StatusOK })
	a := e.create(keyBilling, deletion("cb1", "/tmp/a", map[string]any{"callback_url": rc.srv.URL + "/cb"}))
	if resp := e.do(request{key: keyBilling, method: http.MethodDelete, path: "/v1/approvals/" + a.Token}); resp.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", resp.status, resp.body)
	}
	keys, err := httpapi.ParseKeys(testKeys)
	if err != nil {
		t.Fatal(err)
	}
	var observed []approval.CallbackJob
	var ended []error
	cbs := httpapi.NewCallbacks(httpapi.CallbacksConfig{
		Keys: keys, Store: e.store, Queue: e.store.CallbackQueue(0), Consumer: "observer", AllowPrivate: true, Now: e.clock.Now,
		Observe: func(ctx context.Context, job approval.CallbackJob) (context.Context, func(error)) {
			observed = append(observed, job)
			return context.WithValue(ctx, observedKey{}, "attempt of "+job.TraceParent), func(err error) { ended = append(ended, err) }
		},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				r = r.Clone(r.Context())
				v, _ := r.Context().Value(observedKey{}).(string)
				r.Header.Set("X-Observed", v)
				return rt.RoundTrip(r)
			})
		},
	})
	job := approval.CallbackJob{Token: a.Token, State: approval.StateCancelled, Attempt: 1, TraceParent: "00-trace"}
	cbs.Deliver(t.Context(), job)
	if diff := cmp.Diff([]approval.CallbackJob{job}, observed); diff != "" {
		t.Errorf("observed jobs (-want +got):\n%s", diff)
	}
	if len(ended) != 1 || ended[0] != nil {
		t.Errorf("observed ends %v; want one, delivered", ended)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "attempt of 00-trace" {
		t.Errorf("the receiver saw %q; want the attempt made in Observe's context through the wrapped transport", seen)
	}
}
