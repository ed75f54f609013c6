package store

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The token scripts store the trace context of the span that ended a
// token (a click's, an API call's) with the resume and callback jobs they
// queue, as field tp: the replica that takes a job continues that trace
// (ResumeJob.TraceParent, CallbackJob.TraceParent). Without tracing there
// is no span in ctx, the scripts get an empty ARGV and the jobs no field.

// traceParent is the W3C traceparent header of ctx's span, or "" when ctx
// has no valid span (tracing is off, or not sampled in).
func traceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c.Get("traceparent")
}

// withTrace appends ctx's traceparent to the ARGV of a token script,
// which reads it as its last argument.
func withTrace(ctx context.Context, args []any) []any {
	return append(args, traceParent(ctx))
}
