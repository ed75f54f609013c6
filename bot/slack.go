package bot

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/slack-go/slack"
)

// SlackAPI is the part of the Slack Web API slackbot uses; *slack.Client
// implements it, and tests point a real client at a fake Web API.
type SlackAPI interface {
	PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, string, error)
	PostEphemeralContext(ctx context.Context, channelID, userID string, options ...slack.MsgOption) (string, error)
	OpenViewContext(ctx context.Context, triggerID string, view slack.ModalViewRequest) (*slack.ViewResponse, error)
	GetUserGroupMembersContext(ctx context.Context, userGroup string, options ...slack.GetUserGroupMembersOption) ([]string, error)
	AuthTestContext(ctx context.Context) (*slack.AuthTestResponse, error)
	// GetConversationHistoryContext finds a card whose post failed
	// ambiguously (a timeout after Slack may have acted), so a retry does
	// not post it twice.
	GetConversationHistoryContext(ctx context.Context, params *slack.GetConversationHistoryParameters) (*slack.GetConversationHistoryResponse, error)
	// GetConversationRepliesContext reads a thread slackbot keeps no
	// history for, so a run started in it sees what was said.
	GetConversationRepliesContext(ctx context.Context, params *slack.GetConversationRepliesParameters) (msgs []slack.Message, hasMore bool, nextCursor string, err error)
	// GetPermalinkContext links a card from an escalation message.
	GetPermalinkContext(ctx context.Context, params *slack.PermalinkParameters) (string, error)
}

// Retry says how Slack calls are retried: HTTP 429 waits for Retry-After,
// 5xx and network errors back off exponentially with jitter.
type Retry struct {
	Attempts int           // total attempts for 5xx and network errors; default 5
	Base     time.Duration // first backoff; default 250ms
	Max      time.Duration // longest backoff; default 10s
	// MaxRateLimitWait bounds the total time spent waiting on 429s for one
	// call; default 5 minutes, after which the call fails.
	MaxRateLimitWait time.Duration
	// Sleep waits for d or until ctx ends; nil means a real timer. Tests
	// inject it to avoid sleeping.
	Sleep func(ctx context.Context, d time.Duration) error
	// AttemptTimeout bounds one attempt, so a Slack that never answers is
	// retried rather than waited on forever; default 15s.
	AttemptTimeout time.Duration
}

func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 5
	}
	if r.Base <= 0 {
		r.Base = 250 * time.Millisecond
	}
	if r.Max <= 0 {
		r.Max = 10 * time.Second
	}
	if r.MaxRateLimitWait <= 0 {
		r.MaxRateLimitWait = 5 * time.Minute
	}
	if r.Sleep == nil {
		r.Sleep = sleepCtx
	}
	if r.AttemptTimeout <= 0 {
		r.AttemptTimeout = 15 * time.Second
	}
	return r
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Do calls f until it succeeds, fails for good, or ctx ends. Rate limits
// are waited out as Slack asks and do not use up attempts.
func (r Retry) Do(ctx context.Context, f func(ctx context.Context) error) error {
	r = r.withDefaults()
	var waited time.Duration
	failures := 0
	for {
		actx, cancel := context.WithTimeout(ctx, r.AttemptTimeout)
		err := f(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var rl *slack.RateLimitedError
		switch {
		case errors.As(err, &rl):
			d := rl.RetryAfter
			if d <= 0 {
				d = time.Second
			}
			if waited+d > r.MaxRateLimitWait {
				return fmt.Errorf("rate limited for more than %s: %w", r.MaxRateLimitWait, err)
			}
			waited += d
			if err := r.Sleep(ctx, d); err != nil {
				return err
			}
		case retryable(err):
			failures++
			if failures >= r.Attempts {
				return fmt.Errorf("after %d attempts: %w", failures, err)
			}
			backoff := r.Base << (failures - 1)
			if backoff > r.Max || backoff <= 0 {
				backoff = r.Max
			}
			backoff = backoff/2 + rand.N(backoff/2+1)
			if err := r.Sleep(ctx, backoff); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// countLimited tells m of err, a failed attempt at method, when it is a
// 429, and reports whether it was. Retry waits each 429 out without using
// up an attempt, so it is counted as rate limited where the attempt is
// made, not as a failed call: the call fails only if Retry gives up.
func countLimited(m Metrics, method string, err error) bool {
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) {
		return false
	}
	m.SlackRateLimited(method)
	return true
}

// countAttempt counts err, a failed attempt at method made inside Retry
// by a caller that counts its failures attempt by attempt: a 429 as rate
// limited (countLimited), anything else as an error.
func countAttempt(m Metrics, method string, err error) {
	if !countLimited(m, method, err) {
		m.SlackError(method)
	}
}

// retryable reports whether a failed Slack call may succeed if tried again.
// blocksRefused reports that Slack refused a message's blocks: too much
// text in all (msg_blocks_too_long) or a block it does not accept
// (invalid_blocks). Sending the same again cannot succeed.
func blocksRefused(err error) bool {
	var se slack.SlackErrorResponse
	return errors.As(err, &se) && (se.Err == "msg_blocks_too_long" || se.Err == "invalid_blocks")
}

// lookupRefused reports whether err, from a look-up of messages, is Slack
// refusing it for good — a scope or a channel membership the app lacks, a
// method it does not offer (missing_scope, not_in_channel, unknown_method,
// method_not_supported_for_channel_type, a 404 from a proxy…) — rather
// than a failure that may pass (a rate limit, a 5xx, a timeout, a network
// error, Slack's own internal_error); code names it for a metric label:
// the error code when it is one of lookupRefusals, "http_<status>" for a
// refusing HTTP status, else "other".
func lookupRefused(err error) (code string, refused bool) {
	var se slack.SlackErrorResponse
	var sc slack.StatusCodeError
	switch {
	case err == nil:
		return "", false
	case errors.As(err, &se):
		if slices.Contains(transientSlackErrors, se.Err) {
			return "", false
		}
		if slices.Contains(lookupRefusals, se.Err) {
			return se.Err, true
		}
		return "other", true
	case errors.As(err, &sc):
		if sc.Code >= 500 || sc.Code == http.StatusRequestTimeout || sc.Code == http.StatusTooManyRequests || sc.Code < 400 {
			return "", false
		}
		return "http_" + strconv.Itoa(sc.Code), true
	}
	return "", false
}

// transientSlackErrors are the error codes Slack answers with ok:false for
// a failure on its side, which may pass.
var transientSlackErrors = []string{"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}

// lookupRefusals are the codes of the refusals a look-up of messages
// commonly meets, each its own metric label.
var lookupRefusals = []string{
	"missing_scope", "not_in_channel", "unknown_method", "method_not_supported_for_channel_type",
	"channel_not_found", "thread_not_found", "not_allowed_token_type", "no_permission", "access_denied",
	"ekm_access_denied", "team_access_not_granted", "invalid_auth", "not_authed", "account_inactive", "token_revoked",
}

func retryable(err error) bool {
	var sc slack.StatusCodeError
	if errors.As(err, &sc) {
		return sc.Code >= 500 || sc.Code == 408
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// UncheckedReasons are the reasons Metrics.AnswerUnchecked is told that
// are known in advance (lookupRefused's codes; a refusing HTTP status
// adds "http_<status>"): metrics start each at zero.
func UncheckedReasons() []string { return append(slices.Clone(lookupRefusals), "other") }
