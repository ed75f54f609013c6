package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slackapprove/slackbot/agentrunner"
)

// Bounds of the client.
const (
	// MaxResponse bounds a response body: a request's view holds its
	// results, whose edited arguments are at most the 1 MiB of a body.
	MaxResponse = 4 << 20
	// MaxWait is the longest long poll slackbot serves; Get asks no more.
	MaxWait = 60 * time.Second
	// WaitSlack is how much longer than its wait a long poll may take
	// before Get gives up on it as unreachable.
	WaitSlack = 15 * time.Second
)

// Client speaks to one slackbot with one API key. It is safe for
// concurrent use.
type Client struct {
	base *url.URL
	key  string
	http *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes requests through hc instead of a new http.Client.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// New returns a client of the slackbot at baseURL (an http or https URL,
// such as https://slackbot.example.com) that authenticates with key, a
// key of slackbot's API_KEYS. It fails with ErrInvalidURL or
// ErrInvalidKey.
func New(baseURL, key string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("new slackbot client: %w", ErrInvalidURL)
	}
	if key == "" || strings.ContainsAny(key, " \t\r\n") {
		return nil, fmt.Errorf("new slackbot client: %w", ErrInvalidKey)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	c := &Client{base: u, key: key, http: &http.Client{}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Redacted is the base URL without its password, for messages.
func (c *Client) Redacted() string { return c.base.Redacted() }

// String shows the client without its key.
func (c *Client) String() string { return "slackbot client of " + c.Redacted() }

// GoString shows the client without its key, for %#v.
func (c *Client) GoString() string { return "client.Client{" + strconv.Quote(c.Redacted()) + "}" }

// Create opens an approval request (POST /v1/approvals). slackbot posts
// the cards before it answers.
func (c *Client) Create(ctx context.Context, req CreateRequest) (*Approval, error) {
	type wire struct {
		CreateRequest
		Timeout string `json:"timeout,omitempty"`
	}
	w := wire{CreateRequest: req}
	if req.Timeout > 0 {
		w.Timeout = req.Timeout.String()
	}
	return c.do(ctx, http.MethodPost, "/v1/approvals", w)
}

// Get reads a request (GET /v1/approvals/{token}). With wait > 0 it is a
// long poll: slackbot answers when the request ends or after wait (at
// most MaxWait, in whole seconds), whichever comes first; a poll that
// outlives wait by WaitSlack is abandoned as unreachable.
func (c *Client) Get(ctx context.Context, token string, wait time.Duration) (*Approval, error) {
	path := "/v1/approvals/" + url.PathEscape(token)
	if wait > 0 {
		secs := int(math.Ceil(min(wait, MaxWait).Seconds()))
		path += "?wait=" + strconv.Itoa(secs) + "s"
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(secs)*time.Second+WaitSlack)
		defer cancel()
	}
	return c.do(ctx, http.MethodGet, path, nil)
}

// Results answers calls of a request with the key's own decisions (POST
// /v1/approvals/{token}/results): results of external calls, or
// approvals on a route that allows them (allow_self_approval; else
// CodeSelfApproval).
func (c *Client) Results(ctx context.Context, token string, results agentrunner.DeferredToolResults) (*Approval, error) {
	return c.do(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(token)+"/results", results)
}

// OutcomeReport says what became of an approved call once the program
// acted on the decision: Ran (Error: how the tool failed, if it did), or
// not (Error: why it did not run, required).
type OutcomeReport struct {
	ToolCallID string `json:"tool_call_id"`
	Ran        bool   `json:"ran"`
	Error      string `json:"error,omitempty"`
}

// ReportOutcome reports what became of an approved call of the key's own
// request (POST /v1/approvals/{token}/outcomes), which its card then
// shows: once per call; the same report again changes nothing, a
// different one is CodeConflict, as is a call not approved.
func (c *Client) ReportOutcome(ctx context.Context, token string, report OutcomeReport) (*Approval, error) {
	return c.do(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(token)+"/outcomes", report)
}

// Cancel cancels a pending request (DELETE /v1/approvals/{token}): its
// cards say nobody needs to decide any more.
func (c *Client) Cancel(ctx context.Context, token string) (*Approval, error) {
	return c.do(ctx, http.MethodDelete, "/v1/approvals/"+url.PathEscape(token), nil)
}

// do makes one request with body (nil for none) as JSON and decodes the
// approval request it answers with.
func (c *Client) do(ctx context.Context, method, path string, body any) (*Approval, error) {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return read(resp)
}

// send makes one request with body (nil for none) as JSON; the caller
// reads and closes the response.
func (c *Client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		// Not json.Marshal: it would escape the <, > and & of a shell
		// command as \u003c, \u003e and \u0026, which the card then shows.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(body); err != nil {
			return nil, fmt.Errorf("encode the request: %w", err)
		}
		r = &buf
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, r)
	if err != nil {
		return nil, fmt.Errorf("make the request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which the caller shows once
		}
		return nil, &UnreachableError{Err: err}
	}
	return resp, nil
}

// read reads a response: an approval request, or an error.
func read(resp *http.Response) (*Approval, error) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	switch {
	case err != nil:
		return nil, &UnreachableError{Err: fmt.Errorf("read the response: %w", err)}
	case len(b) > MaxResponse:
		return nil, &ResponseError{Status: resp.StatusCode, Problem: fmt.Sprintf("a body larger than %d bytes", MaxResponse)}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, statusError(resp, b)
	}
	var a Approval
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, &ResponseError{Status: resp.StatusCode, Err: err}
	}
	if a.Token == "" || !knownStatus(a.Status) {
		return nil, &ResponseError{Status: resp.StatusCode,
			Problem: fmt.Sprintf("an approval request without a token or a known status (got status %q)", shorten(a.Status, 40))}
	}
	return &a, nil
}

// statusError reads an error response: {"error":{"code","message"}}.
// Code and message come from the server as they are; they are cut to
// sizes fit for a message.
func statusError(resp *http.Response, body []byte) *Error {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	out := &Error{Status: resp.StatusCode, Code: shorten(e.Error.Code, 40), Message: shorten(e.Error.Message, 1000)}
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		out.RetryAfter = time.Duration(secs) * time.Second
	}
	return out
}

// shorten cuts s to at most n bytes on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
