package main

import (
	"context"
	"net/http"
	"path"
	"strings"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// The spans of one click, from the webhook to the resumed run, on
// whichever replica resumes it:
//
//	POST /slack/interactivity            the webhook (otelhttp), on the replica Slack called
//	  evalsha …                          the decision script (redisotel), and every Redis command
//	  slack chat.update …                Slack calls (otelhttp on the Slack client's transport)
//	  resume run                         on the replica that resumes it, directly or from the
//	                                     resume queue: the trace context went through Redis
//	                                     with the resume job (store: field tp)
//	    tool <name>                      each tool call of the run (agentrunner.WithToolObserver)
//	    job thread.answer                the job posting the run's answer, on any replica (the
//	      slack chat.postMessage         job queue carries the trace context too)
//	  callback                           an API client's callback, on the replica delivering it
//	    callback POST                    its request (otelhttp), which carries traceparent
//
// Each is started only when a.tracer is set: with tracing off nothing is
// wrapped and no span is started.

// tracerName is the instrumentation scope of slackbot's own spans.
const tracerName = "github.com/slackapprove/slackbot"

// w3c is the propagation slackbot speaks: W3C trace context, of which it
// sends on only traceparent.
var w3c propagation.TextMapPropagator = traceParentOnly{}

// traceParentOnly continues a caller's W3C trace (its traceparent, and its
// tracestate into the span context) and passes on only traceparent. A
// client's baggage (whatever key=value pairs it attaches: user ids,
// tenants, tokens) and its tracestate (its tracing vendors' data) are its
// own, and must not reach Slack, upstream servers or callback receivers
// through slackbot; baggage is not even read, as nothing here uses it.
type traceParentOnly struct{ propagation.TraceContext }

// Inject sets carrier's traceparent from ctx's span, and nothing else.
func (p traceParentOnly) Inject(ctx context.Context, carrier propagation.TextMapCarrier) {
	m := propagation.MapCarrier{}
	p.TraceContext.Inject(ctx, m)
	if tp := m.Get("traceparent"); tp != "" {
		carrier.Set("traceparent", tp)
	}
}

// Fields is the one header Inject sets.
func (traceParentOnly) Fields() []string { return []string{"traceparent"} }

// traceHandler wraps h, the whole HTTP handler, in a server span per
// request, named by the route's pattern. A path is never recorded: paths
// of the HTTP API carry resume tokens, so url.path is replaced by the
// pattern too. Slack's webhooks start a new trace (linked to any trace
// context the caller sent: it comes from the internet); API clients may
// continue theirs. Probes and metrics scrapes are not traced.
func traceHandler(tp trace.TracerProvider, h http.Handler) http.Handler {
	return otelhttp.NewHandler(h, "slackbot",
		otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(w3c),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
		otelhttp.WithPublicEndpointFn(func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/slack/") }),
		otelhttp.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case "/healthz", "/readyz", "/metrics":
				return false
			}
			return true
		}))
}

// nameSpan names the server span of ctx, if it records, by route, the
// pattern that served the request (withRequestID, which sees the
// pattern), and records the route in place of the request's path.
func nameSpan(ctx context.Context, route string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetName(route)
	span.SetAttributes(attribute.String("url.path", route), attribute.String("http.route", route))
}

// tracedTransport wraps base in a client span per request, named by name;
// url.full is recorded without query or user info.
func tracedTransport(tp trace.TracerProvider, base http.RoundTripper, name func(*http.Request) string) http.RoundTripper {
	redacted := roundTripper(func(r *http.Request) (*http.Response, error) {
		trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("url.full", redactURL(r.URL.String())))
		return base.RoundTrip(r)
	})
	return otelhttp.NewTransport(redacted, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(w3c),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return name(r) }))
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// slackSpanName names a Slack Web API call by its method: "slack
// chat.postMessage".
func slackSpanName(r *http.Request) string { return "slack " + path.Base(r.URL.Path) }

// traceRedis adds a span per Redis command (and pipeline) of rdb, inside
// the span of the work it serves: commands of the background loops, which
// have no span, start no trace. Commands' arguments (tokens, run state)
// are never recorded.
func traceRedis(rdb redis.UniversalClient, tp trace.TracerProvider) error {
	return redisotel.InstrumentTracing(rdb, redisotel.WithTracerProvider(childOnly{tp: tp}), redisotel.WithDBStatement(false))
}

// childOnly is a TracerProvider whose tracers start spans only inside a
// span.
type childOnly struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (p childOnly) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return childOnlyTracer{t: p.tp.Tracer(name, opts...)}
}

type childOnlyTracer struct {
	embedded.Tracer
	t trace.Tracer
}

func (t childOnlyTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, trace.SpanFromContext(ctx) // a no-op span
	}
	return t.t.Start(ctx, name, opts...)
}

// startSpan starts a span of slackbot's own, or returns ctx and a no-op
// end when tracing is off.
func (a *app) startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, func(err error)) {
	if a.tracer == nil {
		return ctx, func(error) {}
	}
	ctx, span := a.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// continued is ctx inside the trace whose context a job carried through
// Redis (traceparent; "" leaves ctx as it is).
func continued(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// traceResume starts the span of the resume of a run (runs.Runs.Trace),
// in the trace of traceParent when it is not empty, which the run's tool
// calls and Slack posts join.
func (a *app) traceResume(ctx context.Context, traceParent, runID, path string) (context.Context, func(error)) {
	return a.startSpan(continued(ctx, traceParent), "resume run", attribute.String("slackbot.run_id", runID),
		attribute.String("slackbot.resume.path", path), attribute.String("slackbot.instance", a.owner))
}

// observeTool starts a span per tool call (agentrunner.WithToolObserver).
func (a *app) observeTool(ctx context.Context, tc *agentrunner.ToolContext) (context.Context, func(error)) {
	return a.startSpan(ctx, "tool "+tc.ToolName, attribute.String("gen_ai.tool.name", tc.ToolName),
		attribute.String("gen_ai.tool.call.id", tc.ToolCallID), attribute.String("slackbot.run_id", tc.RunID))
}

// observeCallback starts the span of one callback delivery, in the trace
// of what ended the token (httpapi.CallbacksConfig.Observe).
func (a *app) observeCallback(ctx context.Context, job approval.CallbackJob) (context.Context, func(error)) {
	return a.startSpan(continued(ctx, job.TraceParent), "callback", attribute.String("slackbot.state", string(job.State)),
		attribute.Int("slackbot.callback.attempt", job.Attempt))
}
