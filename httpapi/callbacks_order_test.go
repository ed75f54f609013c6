package httpapi_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/httpapi"
)

// orderLog is a CallbackStore and a CallbackQueue that write what is done
// to them in one log, so a test sees the order of audit entries and
// queue operations. Retry hands the next attempt to next at once, as
// another replica that promotes and reads it first would.
type orderLog struct {
	rec  *approval.Request
	next func(ctx context.Context, job approval.CallbackJob)

	mu    sync.Mutex
	audit []string
}

func (o *orderLog) Get(context.Context, string) (*approval.Request, error) { return o.rec, nil }

func (o *orderLog) AuditCallback(_ context.Context, a approval.CallbackAttempt) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.audit = append(o.audit, a.Outcome+" attempt "+strconv.Itoa(a.Attempt))
	return nil
}

func (o *orderLog) Read(context.Context, string, time.Duration) ([]approval.CallbackJob, error) {
	return nil, nil
}

func (o *orderLog) Reclaim(context.Context, string, time.Duration) ([]approval.CallbackJob, error) {
	return nil, nil
}

func (o *orderLog) ReclaimDead(context.Context, string) ([]approval.CallbackJob, error) {
	return nil, nil
}

func (o *orderLog) Ack(context.Context, ...string) error { return nil }

func (o *orderLog) Retry(ctx context.Context, job approval.CallbackJob, _ time.Time) error {
	job.ID, job.Attempt = "next", job.Attempt+1
	o.next(ctx, job)
	return nil
}

func (o *orderLog) Promote(context.Context) (int, error) { return 0, nil }

// TestCallbackRetryAuditedBeforeItCanRun checks that a failed attempt's
// "retrying" entry is in the audit stream before the queue can hand the
// next attempt to any replica: the next attempt, delivered the moment the
// retry is scheduled, is audited after it.
func TestCallbackRetryAuditedBeforeItCanRun(t *testing.T) {
	rc := newReceiver(t, keyBilling, nil, func(n int, _ *http.Request) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	keys, err := httpapi.ParseKeys(testKeys)
	if err != nil {
		t.Fatal(err)
	}
	o := &orderLog{rec: &approval.Request{
		Token: "tok", Origin: approval.Origin{Client: "billing"}, CallbackURL: rc.srv.URL + "/hook",
		State: approval.StateCancelled, Calls: []approval.Call{},
	}}
	cbs := httpapi.NewCallbacks(httpapi.CallbacksConfig{Keys: keys, Store: o, Queue: o, Consumer: "me", AllowPrivate: true})
	o.next = cbs.Deliver
	cbs.Deliver(t.Context(), approval.CallbackJob{ID: "first", Token: "tok", State: approval.StateCancelled, Attempt: 1})
	want := []string{"retrying attempt 1", "delivered attempt 2"}
	if diff := cmp.Diff(want, o.audit); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}
