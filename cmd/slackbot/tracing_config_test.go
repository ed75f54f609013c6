package main

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

// The OTEL_* variables are read through getenv: an endpoint turns tracing
// on, the HTTP base endpoint gets the traces path, gRPC keeps it as given,
// and every bad variable is named in one error (never showing header
// values, which carry credentials).
func TestLoadTracing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      map[string]string
		off      bool
		endpoint string
		grpc     bool
		problems []string
	}{
		{name: "unset", env: map[string]string{}, off: true},
		{name: "disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SDK_DISABLED": "true"}, off: true},
		{name: "exporter none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_TRACES_EXPORTER": "none"}, off: true},
		{name: "http base", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}, endpoint: "http://collector:4318/v1/traces"},
		{name: "traces endpoint as given", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/otlp/traces"}, endpoint: "https://b/otlp/traces"},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, endpoint: "http://collector:4317", grpc: true},
		{name: "every problem", env: map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
			"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%zzsecret", "OTEL_TRACES_SAMPLER": "sometimes",
			"OTEL_RESOURCE_ATTRIBUTES": "novalue",
		}, problems: []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_TRACES_SAMPLER", "OTEL_RESOURCE_ATTRIBUTES"}},
		{name: "bad ratio", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
			problems: []string{"OTEL_TRACES_SAMPLER_ARG"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadTracing(func(k string) string { return tt.env[k] })
			if len(tt.problems) > 0 {
				var ce *ConfigError
				if !errors.As(err, &ce) || len(ce.Problems) != len(tt.problems) {
					t.Fatalf("got %v; want a ConfigError with %d problems", err, len(tt.problems))
				}
				for _, p := range tt.problems {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("error %q does not name %s", err, p)
					}
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("error %q shows a header's value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.off {
				if cfg != nil {
					t.Errorf("got %+v; want tracing off", cfg)
				}
				return
			}
			if cfg == nil || cfg.endpoint != tt.endpoint || cfg.grpc != tt.grpc {
				t.Errorf("got %+v; want endpoint %q, grpc %v", cfg, tt.endpoint, tt.grpc)
			}
		})
	}
}

// A bad OTEL_* variable stops start-up with the other configuration
// problems, in one message.
func TestLoadConfigNamesBadTracingVariables(t *testing.T) {
	t.Parallel()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_SAMPLER": "sometimes", "LOG_LEVEL": "loud"}
	_, err := loadConfig(func(k string) string { return env[k] }, ModeDev)
	for _, want := range []string{"OTEL_TRACES_SAMPLER", "LOG_LEVEL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("loadConfig: %v; want it to name %s", err, want)
		}
	}
}

// tracingVars, which the deployment tests accept besides Config's, are
// exactly the variables loadTracing reads.
func TestTracingVarsAreThoseRead(t *testing.T) {
	t.Parallel()
	read := map[string]bool{}
	getenv := func(k string) string {
		read[k] = true
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return "http://c:4318"
		}
		return ""
	}
	if _, err := loadTracing(getenv); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(read))
	if want := slices.Sorted(slices.Values(tracingVars)); !slices.Equal(got, want) {
		t.Errorf("loadTracing reads %q; tracingVars lists %q", got, want)
	}
}
