package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slackapprove/slackbot/agentrunner"
)

// This file is the hook's client of slackbot's /v1 API: create one
// approval request, long-poll it until it ends, cancel it. It is small
// on purpose (the repository has no Go client of /v1; clients/ holds the
// Python and TypeScript ones), and it reads only the fields the hook
// needs from the responses that httpapi documents in openapi.json.

// statusPending is the status of a request that waits for decisions.
const statusPending = "pending"

// knownStatus reports whether s is a status /v1 reports.
func knownStatus(s string) bool {
	switch s {
	case statusPending, "resolved", "expired", "cancelled", "failed":
		return true
	}
	return false
}

// Bounds of the client.
const (
	// maxAPIResponse bounds a response body (a request's view holds its
	// results, whose edited arguments are at most the 1 MiB of a body).
	maxAPIResponse = 4 << 20
	// longPoll is the wait asked of each GET (slackbot allows up to 60 s).
	longPoll = 30 * time.Second
	// apiSlack is how much longer than its wait a request may take.
	apiSlack = 15 * time.Second
)

// apiClient speaks to one slackbot with one API key. The key is only
// ever sent in the Authorization header: no error or output shows it.
type apiClient struct {
	base   *url.URL
	key    string
	client *http.Client
}

func newAPIClient(rawURL, key string) (*apiClient, error) {
	base, err := parseAPIBase(rawURL)
	if err != nil {
		return nil, err
	}
	switch {
	case key == "":
		return nil, errors.New("SLACKBOT_API_KEY is not set (a key from slackbot's API_KEYS)")
	case strings.ContainsAny(key, " \t\r\n"):
		return nil, errors.New("SLACKBOT_API_KEY holds white space; give the key alone")
	}
	return &apiClient{base: base, key: key, client: &http.Client{}}, nil
}

// parseAPIBase checks SLACKBOT_URL: an http or https URL with a host.
func parseAPIBase(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("SLACKBOT_URL is not set (the base URL of slackbot, e.g. https://slackbot.example.com)")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("SLACKBOT_URL: want an http:// or https:// URL such as https://slackbot.example.com")
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// shown is the base URL as the hook may show it (no password).
func (c *apiClient) shown() string { return c.base.Redacted() }

// apiApproval is the part of an approval request's view the hook reads.
type apiApproval struct {
	Token     string                           `json:"token"`
	Status    string                           `json:"status"`
	ExpiresAt time.Time                        `json:"expires_at"`
	Results   *agentrunner.DeferredToolResults `json:"results"`
	Calls     []apiCall                        `json:"calls"`
}

// apiCall is the part of a call's view the hook reads: whether the key
// that asked decided it (by_client), not a person, a policy or a grant.
type apiCall struct {
	ToolCallID string `json:"tool_call_id"`
	ByClient   bool   `json:"by_client"`
}

// byClient reports whether the view says the key that asked decided
// call id.
func (a *apiApproval) byClient(id string) bool {
	for _, c := range a.Calls {
		if c.ToolCallID == id {
			return c.ByClient
		}
	}
	return false
}

// apiDownError is a request that got no HTTP response.
type apiDownError struct{ Err error }

func (e *apiDownError) Error() string { return e.Err.Error() }
func (e *apiDownError) Unwrap() error { return e.Err }

// apiStatusError is an error response of the API.
type apiStatusError struct {
	Status        int
	Code, Message string
}

func (e *apiStatusError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("it answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("it answered %d %s: %s", e.Status, e.Code, e.Message)
}

// transient reports whether err may pass if the request is made again.
func transient(err error) bool {
	var down *apiDownError
	var status *apiStatusError
	return errors.As(err, &down) || (errors.As(err, &status) && status.Status >= 500)
}

// create opens an approval request (POST /v1/approvals).
func (c *apiClient) create(ctx context.Context, body any) (*apiApproval, error) {
	// Not json.Marshal: it would escape the <, > and & of a shell command
	// as \u003c, \u003e and \u0026, which the card then shows.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	ctx, cancel := context.WithTimeout(ctx, apiSlack*2)
	defer cancel()
	return c.do(ctx, http.MethodPost, "/v1/approvals", b)
}

// wait long-polls a request (GET /v1/approvals/{token}?wait=…) for as
// long as ctx allows, at most longPoll.
func (c *apiClient) wait(ctx context.Context, token string) (*apiApproval, error) {
	wait := longPoll
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl).Truncate(time.Second))
	}
	if wait < time.Second {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, wait+apiSlack)
	defer cancel()
	return c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/approvals/%s?wait=%ds", url.PathEscape(token), int(wait.Seconds())), nil)
}

// cancelQuietly cancels a request (DELETE /v1/approvals/{token}), best
// effort, on a context of its own: the hook's may be what ended.
func (c *apiClient) cancelQuietly(token string) {
	if token == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = c.do(ctx, http.MethodDelete, "/v1/approvals/"+url.PathEscape(token), nil)
}

// do makes one request and decodes the approval request it answers with.
func (c *apiClient) do(ctx context.Context, method, path string, body []byte) (*apiApproval, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which the caller shows once
		}
		return nil, &apiDownError{Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIResponse+1))
	switch {
	case err != nil:
		return nil, &apiDownError{Err: fmt.Errorf("read the response: %w", err)}
	case len(b) > maxAPIResponse:
		return nil, fmt.Errorf("it answered %d with a body larger than %d bytes", resp.StatusCode, maxAPIResponse)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, statusError(resp.StatusCode, b)
	}
	var a apiApproval
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("it answered %d with JSON this hook does not understand: %v", resp.StatusCode, err)
	}
	if a.Token == "" || !knownStatus(a.Status) {
		return nil, fmt.Errorf("it answered %d with an approval request without a token or a known status (got status %q)", resp.StatusCode, shorten(a.Status, 40))
	}
	return &a, nil
}

// statusError reads an error response: {"error":{"code","message"}}.
func statusError(status int, body []byte) error {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return &apiStatusError{Status: status, Code: shorten(e.Error.Code, 40), Message: shorten(e.Error.Message, 300)}
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
