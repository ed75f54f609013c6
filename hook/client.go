package hook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/slackapprove/slackbot/client"
)

// This file adapts package client, the Go client of /v1, to the hook:
// its configuration comes from SLACKBOT_URL and SLACKBOT_API_KEY, its
// requests have the hook's time limits, and its errors are worded for
// the agent that shows them.

// Time limits of the hook's requests.
const (
	// longPoll is the wait asked of each GET (slackbot allows up to 60 s).
	longPoll = 30 * time.Second
	// createTimeout bounds the create, which posts the card first.
	createTimeout = 30 * time.Second
	// cancelTimeout bounds the best-effort cancel.
	cancelTimeout = 5 * time.Second
)

// newAPIClient is the client of SLACKBOT_URL with key SLACKBOT_API_KEY;
// its errors name the variables to set.
func newAPIClient(rawURL, key string) (*client.Client, error) {
	if rawURL == "" {
		return nil, errors.New("SLACKBOT_URL is not set (the base URL of slackbot, e.g. https://slackbot.example.com)")
	}
	api, err := client.New(rawURL, key)
	switch {
	case errors.Is(err, client.ErrInvalidURL):
		return nil, errors.New("SLACKBOT_URL: want an http:// or https:// URL such as https://slackbot.example.com")
	case errors.Is(err, client.ErrInvalidKey) && key == "":
		return nil, errors.New("SLACKBOT_API_KEY is not set (a key from slackbot's API_KEYS)")
	case errors.Is(err, client.ErrInvalidKey):
		return nil, errors.New("SLACKBOT_API_KEY holds white space; give the key alone")
	case err != nil:
		return nil, err
	}
	return api, nil
}

// create opens the hook's approval request.
func create(ctx context.Context, api *client.Client, req client.CreateRequest) (*client.Approval, error) {
	ctx, cancel := context.WithTimeout(ctx, createTimeout)
	defer cancel()
	return api.Create(ctx, req)
}

// wait long-polls a request for as long as ctx allows, at most longPoll.
func wait(ctx context.Context, api *client.Client, token string) (*client.Approval, error) {
	wait := longPoll
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl).Truncate(time.Second))
	}
	if wait < time.Second {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return api.Get(ctx, token, wait)
}

// cancelQuietly cancels a request, best effort, on a context of its own:
// the hook's may be what ended.
func cancelQuietly(api *client.Client, token string) {
	if token == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	_, _ = api.Cancel(ctx, token)
}

// unreachable words an error of the API for the agent.
func unreachable(api *client.Client, err error) hookDecision {
	var down *client.UnreachableError
	if errors.As(err, &down) {
		return denyf("slackbot could not be reached at %s: %v", api.Redacted(), down.Err)
	}
	return denyf("slackbot at %s gave no decision: %s", api.Redacted(), answered(err))
}

// answered says what slackbot answered instead of an approval request.
func answered(err error) string {
	var refused *client.Error
	var bad *client.ResponseError
	switch {
	case errors.As(err, &refused) && refused.Code == "":
		return fmt.Sprintf("it answered %d %s", refused.Status, http.StatusText(refused.Status))
	case errors.As(err, &refused):
		return fmt.Sprintf("it answered %d %s: %s", refused.Status, refused.Code, shorten(refused.Message, 300))
	case errors.As(err, &bad) && bad.Err != nil:
		return fmt.Sprintf("it answered %d with JSON this hook does not understand: %v", bad.Status, bad.Err)
	case errors.As(err, &bad):
		return fmt.Sprintf("it answered %d with %s", bad.Status, bad.Problem)
	}
	return err.Error()
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
