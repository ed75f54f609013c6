package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/openai"
)

// A Model for an OpenAI-compatible server, such as Ollama, drives a Runner.
func Example() {
	// A stand-in for Ollama at http://localhost:11434/v1.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"1","object":"chat.completion","created":0,"model":"llama3.1",
			"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Hello from llama3.1."}}]}`)
	}))
	defer srv.Close()

	m := openai.New("llama3.1", openai.WithBaseURL(srv.URL+"/v1"), openai.WithAPIKey("ollama"))
	r, err := agentrunner.NewRunner(m, nil)
	if err != nil {
		panic(err)
	}
	res, err := r.Run(context.Background(), agentrunner.RunInput{Prompt: "Hi"})
	if err != nil {
		panic(err)
	}
	fmt.Println(m, "says:", res.Output)
	// Output: openai:llama3.1 says: Hello from llama3.1.
}

// A failed request is an error ready to show to a person, and an *APIError
// for code that branches on the status.
func ExampleAPIError() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-wrong-key-123.","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	defer srv.Close()

	m := openai.New("gpt-4o-mini", openai.WithBaseURL(srv.URL), openai.WithAPIKey("sk-wrong-key-123"))
	history := []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("Hi")}}}
	_, err := m.Request(context.Background(), history, agentrunner.RequestParams{})
	fmt.Println(err)
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code)
	}
	// Output:
	// openai gpt-4o-mini: 401 Unauthorized: Incorrect API key provided: [redacted].
	// 401 invalid_api_key
}
