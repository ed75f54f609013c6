package providertest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
)

// Instructions are the instructions of every runner NewRunner makes.
const Instructions = "You help with orders."

// OrderArgs are the arguments of the order tools.
type OrderArgs struct {
	OrderID string `json:"order_id" jsonschema:"description=The order number, e.g. A-17"`
}

// LookupOrder returns the tool lookup_order, which counts its runs in ran
// and finds every order shipped but B-2, whose lookup fails.
func LookupOrder(ran *atomic.Int32) *agentrunner.Tool {
	return agentrunner.NewTool("lookup_order", "Look up an order's status.",
		func(_ context.Context, _ *agentrunner.ToolContext, a OrderArgs) (any, error) {
			ran.Add(1)
			if a.OrderID == "B-2" {
				return nil, errors.New("order database timed out")
			}
			return map[string]string{"order_id": a.OrderID, "status": "shipped"}, nil
		})
}

// CancelOrder returns the tool cancel_order, which requires approval and
// counts its runs in ran.
func CancelOrder(ran *atomic.Int32) *agentrunner.Tool {
	return agentrunner.NewTool("cancel_order", "Cancel an order.",
		func(_ context.Context, _ *agentrunner.ToolContext, a OrderArgs) (any, error) {
			ran.Add(1)
			return "cancelled " + a.OrderID, nil
		}, agentrunner.RequiresApproval())
}

// NewRunner returns a runner of m with tools and Instructions.
func NewRunner(t testing.TB, m agentrunner.Model, tools ...*agentrunner.Tool) *agentrunner.Runner {
	t.Helper()
	r, err := agentrunner.NewRunner(m, tools, agentrunner.WithInstructions(Instructions))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Prompt returns a history of one request with the user prompt s.
func Prompt(s string) []agentrunner.Message {
	return []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt(s)}}}
}

// StubClient returns an HTTP client that answers every request without a
// network: it passes the request to seen, then answers 200 with the JSON
// body. It shows where a Model sends requests, and with which headers,
// when no base URL is given.
func StubClient(body string, seen func(*http.Request)) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen(r)
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
	})}
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
