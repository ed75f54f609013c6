package store_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// traced is ctx inside a (remote, sampled) span, as a click's handler has
// it with tracing on, and that span's W3C traceparent.
func traced(ctx context.Context, n byte) (context.Context, string) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, n}, SpanID: trace.SpanID{4, 5, n}, TraceFlags: trace.FlagsSampled,
	})
	return trace.ContextWithSpanContext(ctx, sc), "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
}

// Every way a token ends queues its resume job and its callback with the
// trace context of the call that ended it, so that the replica that takes
// the job continues that trace; without a span the jobs carry none.
func TestJobsCarryTheTraceOfTheirEnd(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	ctx := t.Context()
	create := func(run string) *approval.Request {
		t.Helper()
		a := &approval.Request{Token: agentrunner.NewToken(), RunID: run, Origin: approval.Origin{Client: "billing"},
			Requests: requests("a1"), ExpiresAt: e.clock.Now().Add(time.Hour), CallbackURL: "https://agent.example/cb"}
		if err := s.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	answer := agentrunner.NewDeferredToolResults()
	answer.Approvals["a1"] = agentrunner.Approve()
	ends := []struct {
		name string
		end  func(ctx context.Context, token string) error
	}{
		{"decide", func(ctx context.Context, token string) error {
			_, err := s.Decide(ctx, token, approve("a1", "U0ALICE"))
			return err
		}},
		{"answer", func(ctx context.Context, token string) error {
			_, err := s.Answer(ctx, token, "billing", answer)
			return err
		}},
		{"cancel", func(ctx context.Context, token string) error { _, err := s.Cancel(ctx, token, "billing"); return err }},
		{"fail", func(ctx context.Context, token string) error {
			_, err := s.Fail(ctx, token, "slackbot", "asking failed")
			return err
		}},
	}
	resumes := s.ResumeQueue(store.ResumeQueueOptions{})
	callbacks := s.CallbackQueue(0)
	for i, end := range ends {
		for _, on := range []bool{true, false} {
			a := create("run-" + end.name)
			ctx, want := traced(ctx, byte(i+1))
			if !on {
				ctx, want = t.Context(), ""
			}
			if err := end.end(ctx, a.Token); err != nil {
				t.Fatalf("%s: %v", end.name, err)
			}
			rj, err := resumes.Read(t.Context(), "replica-1", 0)
			if err != nil || len(rj) != 1 {
				t.Fatalf("%s: resume jobs %v, %v; want one", end.name, rj, err)
			}
			cj, err := callbacks.Read(t.Context(), "replica-1", 0)
			if err != nil || len(cj) != 1 {
				t.Fatalf("%s: callback jobs %v, %v; want one", end.name, cj, err)
			}
			if rj[0].TraceParent != want || cj[0].TraceParent != want {
				t.Errorf("%s (traced %v): resume job traceparent %q, callback %q; want %q", end.name, on, rj[0].TraceParent, cj[0].TraceParent, want)
			}
		}
	}
	// The sweep that expires a token carries the sweep's trace, if any.
	create("run-expired")
	e.clock.Advance(2 * time.Hour)
	swept, want := traced(ctx, 9)
	if _, err := s.Sweep(swept); err != nil {
		t.Fatal(err)
	}
	rj, err := resumes.Read(ctx, "replica-1", 0)
	if err != nil || len(rj) != 1 || rj[0].TraceParent != want {
		t.Errorf("expired: resume jobs %+v, %v; want one with traceparent %q", rj, err, want)
	}
}

// A job added inside a span carries its trace context; one added without
// a span carries none.
func TestJobQueueCarriesTheTrace(t *testing.T) {
	e := newEnv(t)
	q := e.store().JobQueue(4)
	ctx, want := traced(t.Context(), 7)
	if _, err := q.Add(ctx, store.JobThreadAnswer, "", "traced"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Add(t.Context(), store.JobThreadAnswer, "", "untraced"); err != nil {
		t.Fatal(err)
	}
	jobs, err := q.Read(t.Context(), "w1", 0)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("read: %+v, %v; want two jobs", jobs, err)
	}
	got := map[string]string{jobs[0].Data: jobs[0].TraceParent, jobs[1].Data: jobs[1].TraceParent}
	if got["traced"] != want || got["untraced"] != "" {
		t.Errorf("traceparents by job: %q; want traced %q, untraced none", got, want)
	}
}
