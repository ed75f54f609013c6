package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/apitest"
)

// spans is what a test's in-memory exporter holds, with finders.
type spans struct {
	t   *testing.T
	exp *tracetest.InMemoryExporter
}

// newTracer is a tracer provider exporting every span, at once, to an
// in-memory exporter.
func newTracer(t *testing.T) (*sdktrace.TracerProvider, spans) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return tp, spans{t: t, exp: exp}
}

// wait waits for a span that matches, and returns it.
func (s spans) wait(what string, match func(tracetest.SpanStub) bool) tracetest.SpanStub {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, sp := range s.exp.GetSpans() {
			if match(sp) {
				return sp
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no span %s among %d: %s", what, len(s.exp.GetSpans()), s.names())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s spans) names() string {
	var names []string
	for _, sp := range s.exp.GetSpans() {
		names = append(names, sp.Name)
	}
	return strings.Join(names, ", ")
}

func attr(sp tracetest.SpanStub, key string) string {
	for _, kv := range sp.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func childOf(parent tracetest.SpanStub, name string) func(tracetest.SpanStub) bool {
	return func(sp tracetest.SpanStub) bool {
		return sp.Name == name && sp.Parent.SpanID() == parent.SpanContext.SpanID() && sp.SpanContext.TraceID() == parent.SpanContext.TraceID()
	}
}

// A click on a replica that records the decision and dies before it
// resumes the run (a Service without the Resumed port, as in
// TestDecisionWithoutDirectResumeGoesThroughTheQueue) is one trace to the
// run's end on another replica: the webhook's span, the decision script's
// under it, the resume (from the queue: its trace context came through
// Redis with the resume job) under it, the tool's under the resume, and
// the Slack post of the run's answer (through the job queue) in the same
// trace. No span records the resume token.
func TestTraceFollowsAClickToTheResumedRun(t *testing.T) {
	t.Parallel()
	tp, got := newTracer(t)
	e := newEnv(t, envOptions{tracer: tp})
	b, _ := e.replica("replica-b")
	thread := e.mention(carol, general, "delete customer a")
	card := e.waitCards(1)[0]
	e.waitFor("the run to suspend", func() bool { return counterValue(t, e.app.metrics.runs.WithLabelValues("pending")) == 1 })
	token := e.pendingRequest().Token

	// The replica Slack calls: the app's own handler chain over a Bot
	// whose Service resumes nothing.
	dying := approval.New(approval.Config{Store: e.app.store, Poster: e.app.cards, Directory: &bot.Usergroups{Slack: e.app.deps.Slack},
		Routes: e.app.deps.Routes, Now: e.clock.Now})
	t.Cleanup(dying.Close)
	clicked := bot.New(bot.Config{Slack: e.app.deps.Slack, Service: dying, Cards: e.app.cards, TeamID: testTeam})
	mux := http.NewServeMux()
	mux.Handle("POST /slack/interactivity", bot.VerifySlack(testSecret, e.app.log, clicked.HandleInteraction()))
	srv := httptest.NewServer(traceHandler(tp, withRequestID(e.app.log, mux)))
	t.Cleanup(srv.Close)
	postSigned(t, srv.URL+"/slack/interactivity", "application/x-www-form-urlencoded", e.clickPayload(alice, testTeam, card, bot.ActionIDApprove))
	if got := e.waitReply(general, thread); got != deletedAnswer {
		t.Fatalf("answer %q, want %q", got, deletedAnswer)
	}

	hook := got.wait("for the webhook", func(sp tracetest.SpanStub) bool { return sp.Name == "POST /slack/interactivity" })
	if hook.SpanKind != trace.SpanKindServer || attr(hook, "url.path") != "POST /slack/interactivity" {
		t.Errorf("webhook span: kind %v, url.path %q; want a server span recording the route", hook.SpanKind, attr(hook, "url.path"))
	}
	got.wait("of the decision script under the webhook's", func(sp tracetest.SpanStub) bool {
		return childOf(hook, sp.Name)(sp) && strings.HasPrefix(sp.Name, "evalsha")
	})
	resume := got.wait("of the resume under the webhook's", childOf(hook, "resume run"))
	if path := attr(resume, "slackbot.resume.path"); path != "queue" {
		t.Errorf("resume path %q, want queue (the clicked replica resumed nothing)", path)
	}
	if inst := attr(resume, "slackbot.instance"); inst != e.app.owner && inst != b.owner {
		t.Errorf("resumed on %q, want one of the live replicas %q, %q", inst, e.app.owner, b.owner)
	}
	got.wait("of the tool under the resume's", childOf(resume, "tool delete_customer"))
	got.wait("of the answer's Slack post in the click's trace", func(sp tracetest.SpanStub) bool {
		return sp.Name == "slack chat.postMessage" && sp.SpanContext.TraceID() == hook.SpanContext.TraceID()
	})
	got.wait("of the card's update in the click's trace", func(sp tracetest.SpanStub) bool {
		return sp.Name == "slack chat.update" && sp.SpanContext.TraceID() == hook.SpanContext.TraceID()
	})
	for _, sp := range got.exp.GetSpans() {
		for _, kv := range sp.Attributes {
			if strings.Contains(kv.Value.String(), token) {
				t.Errorf("span %s records the resume token in %s", sp.Name, kv.Key)
			}
		}
	}
}

// A click on the replica that started the run resumes it there (the
// direct path), in the click's trace.
func TestTraceOfADirectResume(t *testing.T) {
	t.Parallel()
	tp, got := newTracer(t)
	e := newEnv(t, envOptions{tracer: tp})
	thread := e.mention(carol, general, "delete customer a")
	if answer := e.approveThrough(e.srv.URL, e.waitCards(1)[0], thread); answer != deletedAnswer {
		t.Fatalf("answer %q, want %q", answer, deletedAnswer)
	}
	hook := got.wait("for the webhook", func(sp tracetest.SpanStub) bool { return sp.Name == "POST /slack/interactivity" })
	resume := got.wait("of the resume under the webhook's", childOf(hook, "resume run"))
	if path := attr(resume, "slackbot.resume.path"); path != "direct" {
		t.Errorf("resume path %q, want direct", path)
	}
	got.wait("of the tool under the resume's", childOf(resume, "tool delete_customer"))
}

// Without OTEL_* nothing is traced: no tracer provider is configured,
// and the app neither wraps its handler nor starts a span, even with an
// SDK provider installed as OpenTelemetry's global one (nothing reaches
// for the global): a click and its resumed run export nothing.
func TestTracingOffTracesNothing(t *testing.T) {
	// Not parallel: it sets the global tracer provider.
	if cfg, err := loadTracing(func(string) string { return "" }); cfg != nil || err != nil {
		t.Errorf("loadTracing without OTEL_*: %+v, %v; want off", cfg, err)
	}
	tp, got := newTracer(t)
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	e := newEnv(t, envOptions{})
	if e.app.tracer != nil {
		t.Fatal("the app has a tracer without OTEL_* set")
	}
	thread := e.mention(carol, general, "delete customer a")
	if answer := e.approveThrough(e.srv.URL, e.waitCards(1)[0], thread); answer != deletedAnswer {
		t.Fatalf("answer %q, want %q", answer, deletedAnswer)
	}
	var traced []bool
	d := e.app.deps
	d.Owner = "probe"
	d.Extra = map[string]http.Handler{"GET /probe": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		traced = append(traced, trace.SpanContextFromContext(r.Context()).IsValid())
	})}
	a, err := newApp(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.handler())
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/probe")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(traced) != 1 || traced[0] {
		t.Errorf("the probe's request had a span: %v; want none", traced)
	}
	if n := len(got.exp.GetSpans()); n != 0 {
		t.Errorf("exported %d spans with tracing off (%s); want none", n, got.names())
	}
}

// An API client's answer, in the client's own trace (it sent a
// traceparent), is delivered to its callback URL in that trace: the
// callback's span (on whichever replica delivers it; the job carried the
// trace through Redis) and its POST's span, whose context the receiver
// gets.
func TestTraceOfACallback(t *testing.T) {
	t.Parallel()
	tp, got := newTracer(t)
	e := newEnv(t, envOptions{routes: apitest.Routes, apiKeys: apitest.Keys, wallClock: true, tracer: tp})
	received := make(chan string, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case received <- r.Header.Get("traceparent"):
		default:
		}
	}))
	t.Cleanup(receiver.Close)
	a := apiE2E{env: e, doc: apitest.Load(t)}.create(t, sandboxDeletion("call_1", "/tmp/report.csv", `,"callback_url":"`+receiver.URL+`/cb"`))

	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.srv.URL+"/v1/approvals/"+a.Token+"/results",
		strings.NewReader(`{"approvals":{"call_1":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+keyBilling)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+clientTrace+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("answer: got status %d", resp.StatusCode)
	}
	var header string
	select {
	case header = <-received:
	case <-time.After(30 * time.Second):
		t.Fatal("no callback arrived")
	}
	if !strings.Contains(header, clientTrace) {
		t.Errorf("the callback's traceparent %q is not in the client's trace %s", header, clientTrace)
	}
	answer := got.wait("of the answer", func(sp tracetest.SpanStub) bool {
		return sp.SpanKind == trace.SpanKindServer && sp.SpanContext.TraceID().String() == clientTrace
	})
	const route = "POST /v1/approvals/{token}/results"
	if answer.Name != route || attr(answer, "url.path") != route {
		t.Errorf("the API's span %q records url.path %q; want the route, never the token", answer.Name, attr(answer, "url.path"))
	}
	callback := got.wait("of the callback under the answer's", childOf(answer, "callback"))
	got.wait("of the callback's POST under it", childOf(callback, "callback POST"))
}

// A client's trace context continues through slackbot, but only its
// traceparent goes on: the W3C baggage it sent (anything a client puts
// there: user ids, tenants, tokens) and its tracestate reach neither
// Slack nor the client's callback URL. The client sends them with the
// request (whose card is posted in its trace) and with its answer to the
// request's external call (whose callback follows in its trace).
func TestTracingForwardsOnlyTraceparent(t *testing.T) {
	t.Parallel()
	tp, _ := newTracer(t)
	var mu sync.Mutex
	var slackHeaders []http.Header
	record := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			slackHeaders = append(slackHeaders, r.Header.Clone())
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}
	e := newEnv(t, envOptions{routes: apitest.Routes, apiKeys: apitest.Keys, wallClock: true, tracer: tp, slackMiddleware: record})
	callbacks := make(chan http.Header, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case callbacks <- r.Header.Clone():
		default:
		}
	}))
	t.Cleanup(receiver.Close)

	const (
		clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		baggage     = "user.id=carol%40example.com,tenant=acme-secret-tenant"
		tracestate  = "vendor=acme-secret-state"
	)
	send := func(method, path, body string) []byte {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, e.srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+keyBilling)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", "00-"+clientTrace+"-00f067aa0ba902b7-01")
		req.Header.Set("tracestate", tracestate)
		req.Header.Set("baggage", baggage)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s: got %d %s", method, path, resp.StatusCode, b)
		}
		return b
	}
	a := decodeRequest(t, send(http.MethodPost, "/v1/approvals",
		`{"calls":[{"tool_name":"fetch_report","args":{"id":"r1"},"tool_call_id":"call_1"}],"callback_url":"`+receiver.URL+`/cb"}`))
	e.apiCard(a.Token, "call_1")
	send(http.MethodPost, "/v1/approvals/"+a.Token+"/results", `{"calls":{"call_1":{"rows":3}}}`)

	var callback http.Header
	select {
	case callback = <-callbacks:
	case <-time.After(30 * time.Second):
		t.Fatal("no callback arrived")
	}
	// leaks lists the headers of h that carry the client's baggage or
	// tracestate.
	leaks := func(h http.Header) string {
		var found []string
		for name, values := range h {
			for _, v := range values {
				if strings.EqualFold(name, "baggage") || strings.Contains(v, "acme-secret") {
					found = append(found, name+": "+v)
				}
			}
		}
		slices.Sort(found)
		return strings.Join(found, "; ")
	}
	if !strings.Contains(callback.Get("traceparent"), clientTrace) {
		t.Errorf("the callback's traceparent %q is not in the client's trace %s", callback.Get("traceparent"), clientTrace)
	}
	if l := leaks(callback); l != "" {
		t.Errorf("the callback carries the client's %s", l)
	}
	mu.Lock()
	defer mu.Unlock()
	inTrace := 0
	for _, h := range slackHeaders {
		if strings.Contains(h.Get("traceparent"), clientTrace) {
			inTrace++
		}
		if l := leaks(h); l != "" {
			t.Errorf("a Slack call carries the client's %s", l)
		}
	}
	if inTrace == 0 {
		t.Errorf("none of %d Slack calls is in the client's trace %s", len(slackHeaders), clientTrace)
	}
}
