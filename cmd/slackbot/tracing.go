package main

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Tracing is configured by the standard OpenTelemetry variables, read
// through run's getenv like everything else slackbot reads:
//
//	OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
//	OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL  http/protobuf (default) | grpc
//	OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS    k=v,k2=v2 (URL-encoded values)
//	OTEL_SERVICE_NAME (default slackbot), OTEL_RESOURCE_ATTRIBUTES
//	OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG                      default parentbased_always_on
//	OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none                 tracing off
//
// These are passed to the SDK as explicit options, which take precedence
// over its own reading of the process environment. The SDK still reads
// the process environment for what slackbot does not pass: the exporter's
// TLS files, compression and timeout (OTEL_EXPORTER_OTLP_CERTIFICATE,
// _COMPRESSION, _TIMEOUT…) and the batch processor's and span limits
// (OTEL_BSP_*, OTEL_SPAN_*): tuning knobs whose parsing is the SDK's, and
// which in the binary come from the same environment getenv reads.
//
// Without an endpoint there is no tracer provider at all: nothing is
// instrumented (no handler, transport or Redis hook is wrapped) and no
// span is started, so tracing off costs nothing.

// tracingVars are the variables loadTracing reads.
var tracingVars = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL",
	"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS",
	"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
	"OTEL_RESOURCE_ATTRIBUTES", "OTEL_SERVICE_NAME",
}

// tracingConfig is the tracing part of the configuration.
type tracingConfig struct {
	// endpoint is the traces endpoint: a URL for http/protobuf, a URL or
	// host:port for grpc.
	endpoint string
	grpc     bool
	headers  map[string]string
	sampler  sdktrace.Sampler
	resource *resource.Resource
}

// loadTracing reads the tracing configuration from getenv; nil when
// tracing is off. Every bad variable is named in one ConfigError.
func loadTracing(getenv func(string) string) (*tracingConfig, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return nil, nil
	}
	traces, base := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	if traces == "" && base == "" {
		return nil, nil
	}
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	cfg := &tracingConfig{}
	switch p := firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"); p {
	case "", "http/protobuf":
	case "grpc":
		cfg.grpc = true
	default:
		bad("OTEL_EXPORTER_OTLP_PROTOCOL %q: want http/protobuf or grpc", p)
	}
	cfg.endpoint = traces
	if traces == "" {
		// The signal's path is added to the base endpoint for HTTP, as
		// the specification says; gRPC has no path.
		cfg.endpoint = base
		if !cfg.grpc {
			cfg.endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
		}
	}
	if u, err := url.Parse(cfg.endpoint); !cfg.grpc && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		bad("OTEL_EXPORTER_OTLP_ENDPOINT %q: want an http:// or https:// URL", redactURL(cfg.endpoint))
	}
	var err error
	if cfg.headers, err = parseOTelList(firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")); err != nil {
		// The headers carry credentials: the message never shows them.
		bad("OTEL_EXPORTER_OTLP_HEADERS: %v", err)
	}
	if cfg.sampler, err = parseSampler(getenv("OTEL_TRACES_SAMPLER"), getenv("OTEL_TRACES_SAMPLER_ARG")); err != nil {
		bad("OTEL_TRACES_SAMPLER: %v", err)
	}
	attrs, err := parseOTelList(getenv("OTEL_RESOURCE_ATTRIBUTES"))
	if err != nil {
		bad("OTEL_RESOURCE_ATTRIBUTES: %v", err)
	}
	kv := []attribute.KeyValue{attribute.String("service.version", buildVersion())}
	for k, v := range attrs {
		kv = append(kv, attribute.String(k, v))
	}
	name := getenv("OTEL_SERVICE_NAME")
	if name == "" && attrs["service.name"] == "" {
		name = "slackbot"
	}
	if name != "" {
		kv = append(kv, attribute.String("service.name", name))
	}
	cfg.resource = resource.NewSchemaless(kv...)
	if len(problems) > 0 {
		return nil, &ConfigError{Problems: problems}
	}
	return cfg, nil
}

// newTracerProvider starts the exporter of cfg and returns a provider that
// batches spans to it; instance names this process (service.instance.id).
func newTracerProvider(ctx context.Context, cfg *tracingConfig, instance string) (*sdktrace.TracerProvider, error) {
	var exp sdktrace.SpanExporter
	var err error
	if cfg.grpc {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithHeaders(cfg.headers)}
		if strings.Contains(cfg.endpoint, "://") {
			opts = append(opts, otlptracegrpc.WithEndpointURL(cfg.endpoint))
		} else {
			opts = append(opts, otlptracegrpc.WithEndpoint(cfg.endpoint))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	} else {
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.endpoint), otlptracehttp.WithHeaders(cfg.headers))
	}
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry exporter: %w", err)
	}
	res, err := resource.Merge(cfg.resource, resource.NewSchemaless(attribute.String("service.instance.id", instance)))
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(cfg.sampler), sdktrace.WithResource(res)), nil
}

// firstSet is the value of the first of names that is set.
func firstSet(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// parseOTelList parses the W3C-baggage-like list of OTEL_*_HEADERS and
// OTEL_RESOURCE_ATTRIBUTES: key=value pairs separated by commas, values
// URL-encoded.
func parseOTelList(s string) (map[string]string, error) {
	out := map[string]string{}
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("item %d is not key=value", i+1)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("item %d (%s): bad URL encoding", i+1, k)
		}
		out[k] = dv
	}
	return out, nil
}

// parseSampler is the sampler OTEL_TRACES_SAMPLER names (with its
// _ARG); default parentbased_always_on.
func parseSampler(name, arg string) (sdktrace.Sampler, error) {
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG %q: want a ratio from 0 to 1", arg)
		}
		return r, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		if name == "traceidratio" {
			return sdktrace.TraceIDRatioBased(r), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	default:
		return nil, fmt.Errorf("%q: want always_on, always_off, traceidratio or parentbased_ one of them", name)
	}
}

// redactURL is u without user info and query, for messages and spans.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}
