package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/anthropic"
)

// A Model drives a Runner.
func Example() {
	// A stand-in for https://api.anthropic.com.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
			"content":[{"type":"text","text":"Hello from Claude."}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	defer srv.Close()

	m := anthropic.New("claude-sonnet-4-5", anthropic.WithBaseURL(srv.URL), anthropic.WithAPIKey("sk-ant-..."))
	r, err := agentrunner.NewRunner(m, nil)
	if err != nil {
		panic(err)
	}
	res, err := r.Run(context.Background(), agentrunner.RunInput{Prompt: "Hi"})
	if err != nil {
		panic(err)
	}
	fmt.Println(m, "says:", res.Output)
	// Output: anthropic:claude-sonnet-4-5 says: Hello from Claude.
}

// A failed request is an error ready to show to a person, and an *APIError
// for code that branches on the status.
func ExampleAPIError() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
	}))
	defer srv.Close()

	m := anthropic.New("claude-sonnet-4-5", anthropic.WithBaseURL(srv.URL), anthropic.WithAPIKey("sk-ant-wrong"))
	history := []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("Hi")}}}
	_, err := m.Request(context.Background(), history, agentrunner.RequestParams{})
	fmt.Println(err)
	var apiErr *anthropic.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Type)
	}
	// Output:
	// anthropic claude-sonnet-4-5: 401 Unauthorized: invalid x-api-key
	// 401 authentication_error
}
