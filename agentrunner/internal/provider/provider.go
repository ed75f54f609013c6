// Package provider holds what agentrunner's model providers (openai,
// anthropic) do alike, so that it is written and tested once: the flow of
// one request, errors that name the provider and the model and never show
// the API key, finding an error message in a body of whatever shape a
// server or gateway chose, and Pydantic AI's wording of retry prompts.
//
// What differs between the APIs stays in each provider's package and comes
// in as parameters: the SDK and its HTTP error type, the *APIError made of
// it, the wire shapes, and the error bodies the API itself writes.
package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/slackapprove/slackbot/agentrunner"
)

// Model names a provider's model and makes the errors its requests return.
// Each provider's Model holds one. It is safe for concurrent use, and
// printing it does not show the API key.
type Model struct {
	provider string
	name     string
	redact   *Redactor
	// apiError returns the provider's *APIError for an HTTP error of its
	// SDK, and false for any other error.
	apiError func(error) (error, bool)
}

// NewModel returns the Model name of provider (e.g. "openai",
// "gpt-4o-mini"), whose errors hide apiKey. apiError makes the error that
// callers branch on (the provider's *APIError) from the SDK's HTTP error
// E; it is given the Model's redactor to hide the key in the server's
// message.
func NewModel[E error](provider, name, apiKey string, apiError func(E, *Redactor) error) *Model {
	m := &Model{provider: provider, name: name, redact: NewRedactor(apiKey)}
	m.apiError = func(err error) (error, bool) {
		var e E
		if !errors.As(err, &e) {
			return nil, false
		}
		return apiError(e, m.redact), true
	}
	return m
}

// Name returns the model's name as the API knows it, e.g. "gpt-4o-mini".
func (m *Model) Name() string { return m.name }

// String returns "<provider>:<name>", as slackbot's MODEL names a model.
func (m *Model) String() string { return m.provider + ":" + m.name }

// Fail returns the error a request returns for err: the SDK's HTTP error
// becomes the provider's *APIError, any other error has the API key
// hidden, and the provider and the model lead, e.g.
// "openai gpt-4o-mini: 401 Unauthorized: Incorrect API key provided".
func (m *Model) Fail(err error) error {
	if apiErr, ok := m.apiError(err); ok {
		err = apiErr
	} else {
		err = m.redact.Error(err)
	}
	return fmt.Errorf("%s %s: %w", m.provider, m.name, err)
}

// Send sends body with send, the SDK's method (e.g. the chat completion
// service's New), and maps its answer with parse. An error of either goes
// through m.Fail; a response that does not name the model that wrote it is
// given m's name.
func Send[B, R, O any](ctx context.Context, m *Model, send func(context.Context, B, ...O) (R, error), body B, parse func(R) (agentrunner.Message, error)) (agentrunner.Message, error) {
	resp, err := send(ctx, body)
	if err != nil {
		return agentrunner.Message{}, m.Fail(err)
	}
	msg, err := parse(resp)
	if err != nil {
		return agentrunner.Message{}, m.Fail(err)
	}
	if msg.ModelName == "" {
		msg.ModelName = m.name
	}
	return msg, nil
}

// retrySuffix ends every retry prompt, as Pydantic AI ends them.
const retrySuffix = "\n\nFix the errors and try again."

// RetryText returns what the retry prompt p says to the model, worded as
// Pydantic AI words it, and whether it is about a tool call. One about a
// call answers p.ToolCallID as that call's result; any other is feedback
// on the model's answer, sent as the user's words.
func RetryText(p agentrunner.Part) (text string, aboutCall bool) {
	if p.ToolName != "" && p.ToolCallID != "" {
		return p.Content + retrySuffix, true
	}
	return "Validation feedback:\n" + p.Content + retrySuffix, false
}

// NewCallID returns prefix followed by 24 random hex digits: an id for a
// tool call that a server sent without one, so that every call in a
// history has its own.
func NewCallID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
