package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// toError maps approval's errors by code, wrapped as the store wraps them,
// each to its status and message; a failed request is not a resolved one.
func TestToErrorMapsApprovalCodes(t *testing.T) {
	tests := []struct {
		err    error
		status int
		code   string
		msg    string
	}{
		{fmt.Errorf("get abc: %w", approval.ErrNotFound), http.StatusNotFound, CodeNotFound, "no approval request"},
		{fmt.Errorf("wait abc: %w", agentrunner.ErrTokenNotFound), http.StatusNotFound, CodeNotFound, "no approval request"},
		{fmt.Errorf("answer abc: %w: c1", approval.ErrNotPending), http.StatusConflict, CodeConflict, "decided meanwhile"},
		{fmt.Errorf("decide abc c1: %w", approval.ErrDecided), http.StatusConflict, CodeConflict, "decided meanwhile"},
		{fmt.Errorf("cancel abc: %w", approval.ErrResolved), http.StatusConflict, CodeConflict, "already resolved"},
		{fmt.Errorf("cancel abc: %w", approval.ErrFailed), http.StatusConflict, CodeConflict, "could not ask"},
		{fmt.Errorf("cancel abc: %w", approval.ErrExpired), http.StatusConflict, CodeConflict, "expired"},
		{fmt.Errorf("cancel abc: %w", approval.ErrCancelled), http.StatusConflict, CodeConflict, "cancelled"},
		{fmt.Errorf("record approval: %w", &approval.RateLimitError{Limit: approval.LimitRate, RetryAfter: 2 * time.Second}), http.StatusTooManyRequests, CodeRateLimited, "API_RATE"},
		{fmt.Errorf("record approval: %w", &approval.RateLimitError{Limit: approval.LimitMaxOpen, RetryAfter: time.Second}), http.StatusTooManyRequests, CodeRateLimited, "API_MAX_OPEN"},
		{fmt.Errorf("open: %w", approval.Errorf(approval.EFORBIDDEN, "call x (t), route %q: %w", "ops", approval.ErrRouteNotForTool)), http.StatusForbidden, CodeRouteForbidden, "when.tools"},
		{fmt.Errorf("open: %w", approval.Errorf(approval.ENOROUTE, "route %q: no such route", "x")), http.StatusForbidden, CodeRouteForbidden, "may not send"},
		{approval.Errorf(approval.EFORBIDDEN, "route %q: not allowed for this API client", "ops"), http.StatusForbidden, CodeRouteForbidden, "may not send"},
		{fmt.Errorf("decide: %w", approval.Errorf(approval.EINVALID, "answers must name calls: approval nope")), http.StatusBadRequest, CodeInvalidRequest, "approval nope"},
		{approval.Errorf(approval.EPOLICY, `approvals["r1"].override_args: the "refunds" route's policy denies these arguments`), http.StatusBadRequest, CodeInvalidRequest, `approvals["r1"].override_args`},
		{approval.Errorf(approval.ECONFLICT, "already decided: x1 (answered by billing)"), http.StatusConflict, CodeConflict, "x1 (answered by billing)"},
		{fmt.Errorf("decide: %w", approval.Errorf(approval.ESELFAPPROVAL, "The API key %q may not approve or deny the calls it asked for (r1)", "billing")), http.StatusForbidden, CodeSelfApproval, "(r1)"},
		{fmt.Errorf("decide: %w", approval.Errorf(approval.ESTEPUP, "call s1 needs a person's step-up (a passkey)")), http.StatusForbidden, CodeStepUpRequired, "s1 needs"},
		{errors.New("dial tcp: connection refused"), http.StatusInternalServerError, CodeInternal, "try again later"},
		{fmt.Errorf("answer abc: %w (0 of 1 replicas confirmed)", approval.ErrUnconfirmed), http.StatusServiceUnavailable, CodeUnconfirmed, "not in effect"},
		{fmt.Errorf("answer abc: %w", approval.ErrRecording), http.StatusServiceUnavailable, CodeUnconfirmed, "nothing changed"},
	}
	for _, tt := range tests {
		got := toError(tt.err)
		if got.Status != tt.status || got.Code != tt.code || !strings.Contains(got.Message, tt.msg) {
			t.Errorf("toError(%v) = %d %s %q; want %d %s with %q", tt.err, got.Status, got.Code, got.Message, tt.status, tt.code, tt.msg)
		}
	}
	if got := toError(fmt.Errorf("x: %w", &approval.RateLimitError{Limit: approval.LimitRate, RetryAfter: 2 * time.Second})); got.RetryAfter != 2*time.Second {
		t.Errorf("rate limited: RetryAfter %s, want 2s", got.RetryAfter)
	}
	if got := toError(fmt.Errorf("x: %w", approval.ErrUnconfirmed)); got.RetryAfter <= 0 {
		t.Errorf("unconfirmed: RetryAfter %s, want a Retry-After", got.RetryAfter)
	}
}

// An internal error is logged once, with its detail, and the client gets
// only the generic answer; an error the client caused is not logged.
func TestWriteErrorLogsInternalErrorsOnce(t *testing.T) {
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, nil))
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/v1/approvals/abc", nil)
	writeError(w, r, log, fmt.Errorf("get abc: %w", errors.New("dial tcp 10.1.2.3:6379: connection refused")))
	if w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "10.1.2.3") || !strings.Contains(w.Body.String(), `"internal"`) {
		t.Errorf("internal error: got %d %s, want 500 internal without the detail", w.Code, w.Body)
	}
	if n := strings.Count(buf.String(), "10.1.2.3"); n != 1 {
		t.Errorf("the internal error is logged %d times, want once: %s", n, buf.String())
	}
	buf.Reset()
	w = httptest.NewRecorder()
	writeError(w, r, log, approval.Errorf(approval.EINVALID, "answers must name calls of this request: approval nope"))
	if w.Code != http.StatusBadRequest || buf.Len() != 0 {
		t.Errorf("a client's error: got %d and log %q, want 400 and nothing logged", w.Code, buf.String())
	}
}
