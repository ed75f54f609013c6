package provider_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/internal/provider"
)

// sdkError stands in for an SDK's HTTP error.
type sdkError struct {
	status int
	msg    string
}

func (e *sdkError) Error() string { return fmt.Sprintf("POST /v1/x: %d %s", e.status, e.msg) }

// apiError stands in for a provider's *APIError.
type apiError struct {
	status int
	msg    string
	err    error
}

func (e *apiError) Error() string { return provider.ErrorText(e.status, "", e.msg) }
func (e *apiError) Unwrap() error { return e.err }

func newAPIError(e *sdkError, redact *provider.Redactor) error {
	return &apiError{status: e.status, msg: provider.ServerMessage(e.msg, redact), err: e}
}

func newModel() *provider.Model {
	return provider.NewModel("acme", "rocket-1", key, newAPIError)
}

func TestModelNames(t *testing.T) {
	m := newModel()
	if got, want := m.Name(), "rocket-1"; got != want {
		t.Errorf("Name: got %q, want %q", got, want)
	}
	if got, want := m.String(), "acme:rocket-1"; got != want {
		t.Errorf("String: got %q, want %q", got, want)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		for _, v := range []any{m, *m} {
			if s := fmt.Sprintf(verb, v); strings.Contains(s, key) || strings.Contains(s, fmt.Sprintf("%x", key)) {
				t.Errorf("Sprintf(%q, %T) shows the key: %s", verb, v, s)
			}
		}
	}
}

func TestFail(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		want    string
		wantAPI bool
	}{
		{"SDK error becomes the API error", &sdkError{401, "bad key " + key}, "acme rocket-1: 401: bad key [redacted]", true},
		{"wrapped SDK error too", fmt.Errorf("retry: %w", &sdkError{500, "oops"}), "acme rocket-1: 500: oops", true},
		{"other error, key hidden", fmt.Errorf("dial http://x/?key=%s: %w", key, context.DeadlineExceeded),
			"acme rocket-1: dial http://x/?key=[redacted]: context deadline exceeded", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newModel().Fail(tt.err)
			if got.Error() != tt.want {
				t.Errorf("Fail: got %q, want %q", got, tt.want)
			}
			var ae *apiError
			if errors.As(got, &ae) != tt.wantAPI {
				t.Errorf("errors.As(*apiError): got %v, want %v", !tt.wantAPI, tt.wantAPI)
			}
			if !errors.Is(got, tt.err) && !tt.wantAPI {
				t.Errorf("Fail: got %v, want it to wrap %v", got, tt.err)
			}
		})
	}
	if err := newModel().Fail(context.Canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("Fail(context.Canceled): got %v, want errors.Is context.Canceled", err)
	}
}

// option stands in for an SDK's request option, for send's signature.
type option struct{}

func TestSend(t *testing.T) {
	errParse := errors.New("parse failed")
	tests := []struct {
		name          string
		sendErr       error
		parsed        agentrunner.Message
		parseErr      error
		wantModelName string
		wantErr       string
	}{
		{name: "response without a model name", parsed: agentrunner.Message{Kind: agentrunner.KindResponse},
			wantModelName: "rocket-1"},
		{name: "response naming its model", parsed: agentrunner.Message{Kind: agentrunner.KindResponse, ModelName: "rocket-1-2025"},
			wantModelName: "rocket-1-2025"},
		{name: "send fails", sendErr: &sdkError{429, "slow down"}, wantErr: "acme rocket-1: 429: slow down"},
		{name: "parse fails", parseErr: errParse, wantErr: "acme rocket-1: parse failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotBody string
			send := func(_ context.Context, body string, _ ...option) (int, error) {
				gotBody = body
				return 42, tt.sendErr
			}
			parse := func(resp int) (agentrunner.Message, error) {
				if resp != 42 {
					t.Errorf("parse: got %d, want what send returned", resp)
				}
				return tt.parsed, tt.parseErr
			}
			got, err := provider.Send(t.Context(), newModel(), send, "the body", parse)
			if gotBody != "the body" {
				t.Errorf("send: got body %q, want %q", gotBody, "the body")
			}
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Send: got %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			if got.ModelName != tt.wantModelName {
				t.Errorf("ModelName: got %q, want %q", got.ModelName, tt.wantModelName)
			}
		})
	}
}

func TestRetryText(t *testing.T) {
	tests := []struct {
		name          string
		part          agentrunner.Part
		want          string
		wantAboutCall bool
	}{
		{"about a call", agentrunner.RetryPrompt("refund", "c4", "order_id: unknown order"),
			"order_id: unknown order\n\nFix the errors and try again.", true},
		{"about the answer", agentrunner.Part{PartKind: agentrunner.PartRetryPrompt, Content: "Please answer in English."},
			"Validation feedback:\nPlease answer in English.\n\nFix the errors and try again.", false},
		{"a call id without a tool name", agentrunner.Part{PartKind: agentrunner.PartRetryPrompt, ToolCallID: "c1", Content: "x"},
			"Validation feedback:\nx\n\nFix the errors and try again.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, aboutCall := provider.RetryText(tt.part)
			if got != tt.want || aboutCall != tt.wantAboutCall {
				t.Errorf("RetryText: got %q, %v, want %q, %v", got, aboutCall, tt.want, tt.wantAboutCall)
			}
		})
	}
}

func TestNewCallID(t *testing.T) {
	a, b := provider.NewCallID("call_"), provider.NewCallID("call_")
	if !strings.HasPrefix(a, "call_") || len(a) != len("call_")+24 {
		t.Errorf("NewCallID: got %q, want call_ and 24 hex digits", a)
	}
	if a == b {
		t.Errorf("NewCallID: got %q twice", a)
	}
}
