package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// openAPI opens a request as the HTTP API does, for client ci.
func openAPI(t *testing.T, f *fixture, req agentrunner.DeferredToolRequests) string {
	t.Helper()
	token := agentrunner.NewToken()
	if _, err := f.Svc.Open(t.Context(), approval.Opening{Token: token, Requests: req, Origin: approval.Origin{Client: "ci"}}); err != nil {
		t.Fatalf("Open: %v", err)
	}
	return token
}

// Admit runs before the request is recorded: its refusal is Open's error,
// with nothing recorded and no card posted; when it admits, Recorded runs
// after the record exists.
func TestOpenAdmitRefusesWithNothingRecorded(t *testing.T) {
	f := newFixture(t)
	req := agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("a", "deploy", `{"env":"staging"}`)}}
	token := agentrunner.NewToken()
	recorded := false
	_, err := f.Svc.Open(t.Context(), approval.Opening{
		Token: token, Requests: req, Origin: approval.Origin{Client: "ci"},
		Admit: func(_ context.Context, r *approval.Request) error {
			if r.ExpiresAt.IsZero() || r.Token != token {
				t.Errorf("Admit saw %+v, want the planned request with its deadline", r)
			}
			return &approval.RateLimitError{Limit: approval.LimitRate, RetryAfter: time.Second}
		},
		Recorded: func(context.Context, *approval.Request) error { recorded = true; return nil },
	})
	var limited *approval.RateLimitError
	if !errors.As(err, &limited) || limited.RetryAfter != time.Second || approval.ErrorCode(err) != approval.ERATELIMITED {
		t.Fatalf("Open with Admit refusing: %v (code %q), want the RateLimitError", err, approval.ErrorCode(err))
	}
	if _, err := f.Store.Get(t.Context(), token); approval.ErrorCode(err) != approval.ENOTFOUND {
		t.Errorf("a request Admit refused was recorded (%v)", err)
	}
	if recorded || len(f.Poster.Posted) > 0 {
		t.Errorf("after Admit refused: Recorded called %v, %d cards posted; want neither", recorded, len(f.Poster.Posted))
	}

	token = agentrunner.NewToken()
	_, err = f.Svc.Open(t.Context(), approval.Opening{
		Token: token, Requests: req, Origin: approval.Origin{Client: "ci"},
		Admit: func(context.Context, *approval.Request) error { return nil },
		Recorded: func(ctx context.Context, r *approval.Request) error {
			if _, err := f.Store.Get(ctx, r.Token); err != nil {
				t.Errorf("Recorded ran before the record exists: %v", err)
			}
			recorded = true
			return nil
		},
	})
	if err != nil || !recorded {
		t.Fatalf("Open admitted: %v, Recorded called %v", err, recorded)
	}
}

// A named route that does not match a call's tool is EFORBIDDEN caused by
// ErrRouteNotForTool, so the API can say "name another route"; a route
// the client may not use is EFORBIDDEN without that cause.
func TestOpenTellsRouteNotForTool(t *testing.T) {
	f := newFixture(t)
	req := agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("a", "deploy", `{}`)}}
	_, err := f.Svc.Open(t.Context(), approval.Opening{Token: agentrunner.NewToken(), Requests: req, Route: "refunds"})
	if approval.ErrorCode(err) != approval.EFORBIDDEN || !errors.Is(err, approval.ErrRouteNotForTool) {
		t.Errorf("a route for another tool: %v, want EFORBIDDEN caused by ErrRouteNotForTool", err)
	}
	_, err = f.Svc.Open(t.Context(), approval.Opening{Token: agentrunner.NewToken(), Requests: req, AllowedRoutes: []string{"refunds"}})
	if approval.ErrorCode(err) != approval.EFORBIDDEN || errors.Is(err, approval.ErrRouteNotForTool) {
		t.Errorf("a route the client may not use: %v, want EFORBIDDEN without ErrRouteNotForTool", err)
	}
}

// An API answer is refused whole, naming every answer that names no call
// of the request under its kind (as the wire format puts them: approval
// or call), sorted; answers to decided calls are a conflict before any
// edit is checked.
func TestAPIAnswerRefusals(t *testing.T) {
	f := newFixture(t)
	token := openAPI(t, f, agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{call("a", "ci_deploy", `{"env":"staging"}`)},
		Calls:     []agentrunner.ToolCallPart{call("x", "deploy", `{}`)},
	})
	by := approval.Decider{Client: "ci"}
	_, err := f.Svc.Decide(t.Context(), token, by,
		approval.Decision{CallID: "x", Action: approval.ActionApprove},
		approval.Decision{CallID: "nope", Action: approval.ActionApprove},
		approval.Decision{CallID: "a", Action: approval.ActionAnswer, Answer: json.RawMessage(`1`)})
	if approval.ErrorCode(err) != approval.EINVALID || !strings.HasSuffix(approval.ErrorMessage(err), ": approval nope, approval x, call a") {
		t.Errorf("misfit answers: %q (%s), want EINVALID naming approval nope, approval x, call a", approval.ErrorMessage(err), approval.ErrorCode(err))
	}
	if _, err := f.Svc.Decide(t.Context(), token, by, approval.Decision{CallID: "x", Action: approval.ActionAnswer, Answer: json.RawMessage(`{"rows":3}`)}); err != nil {
		t.Fatal(err)
	}
	_, err = f.Svc.Decide(t.Context(), token, by,
		approval.Decision{CallID: "a", Action: approval.ActionApprove, OverrideArgs: json.RawMessage(`{"env":"prod-eu"}`)},
		approval.Decision{CallID: "x", Action: approval.ActionAnswer, Answer: json.RawMessage(`2`)})
	if approval.ErrorCode(err) != approval.ECONFLICT || !strings.Contains(approval.ErrorMessage(err), "x (answered by ci)") {
		t.Errorf("a decided call and a refused edit: %q (%s), want the conflict first", approval.ErrorMessage(err), approval.ErrorCode(err))
	}
}

// An external call may be answered with a retry (the wire's model-retry),
// and who answered is the client followed by the name it gives, even when
// the name is its own.
func TestAPIAnswerRetryAndAnsweredBy(t *testing.T) {
	f := newFixture(t)
	token := openAPI(t, f, agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{call("a", "ci_deploy", `{"env":"staging"}`)},
		Calls:     []agentrunner.ToolCallPart{call("x", "deploy", `{}`)},
	})
	d, err := f.Svc.Decide(t.Context(), token, approval.Decider{Client: "ci"},
		approval.Decision{CallID: "a", By: "ci", Action: approval.ActionDeny},
		approval.Decision{CallID: "x", Action: approval.ActionRetry, Reason: "the warehouse is down; try later"})
	if err != nil || !d.Resolved {
		t.Fatalf("answer: %+v, %v", d, err)
	}
	res := d.Request.Results(nil)
	if got := res.Calls["x"]; !got.Retry || got.Message != "the warehouse is down; try later" {
		t.Errorf("retry answer: got %+v, want a model-retry with the message", got)
	}
	if got := res.AnsweredBy["a"]; got != "ci/ci" {
		t.Errorf("answered_by of a name the client gave: %q, want ci/ci", got)
	}
	if got, ok := res.AnsweredBy["x"]; ok && got != "ci" {
		t.Errorf("answered_by with no name given: %q, want ci", got)
	}
}

// Fail ends a request whose opening failed after it was recorded: the
// waiter is told there was no decision, and its cards are updated.
func TestFailEndsTheRequest(t *testing.T) {
	f := newFixture(t)
	token := openAPI(t, f, agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{call("a", "deploy", `{"env":"staging"}`)}})
	r, err := f.Svc.Fail(t.Context(), token, "slackbot could not ask for a decision")
	if err != nil || r.State != approval.StateFailed || r.EndedBy != approval.BySlackbot {
		t.Fatalf("Fail: %+v, %v; want failed by %s", r, err, approval.BySlackbot)
	}
	if _, err := f.Svc.Fail(t.Context(), token, "again"); approval.ErrorCode(err) != approval.EFAILED {
		t.Errorf("Fail twice: code %q, want failed", approval.ErrorCode(err))
	}
	f.Svc.Close()
	if f.Poster.UpdateCount("a") == 0 {
		t.Error("the card of a failed request was not updated")
	}
}
