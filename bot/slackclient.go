package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

// messageUpdater updates a message reading nothing of Slack's answer but
// ok and error. Cards use it when their SlackAPI has it (SlackClient):
// slack-go's UpdateMessageContext decodes the whole message Slack echoes
// back, blocks and all, which was a seventh of a click's CPU.
type messageUpdater interface {
	UpdateMessageLean(ctx context.Context, channelID, timestamp, text string, blocks []slack.Block) error
}

// SlackClient is the slack-go client with a lean chat.update
// (UpdateMessageLean) over the same HTTP client, token and API URL.
type SlackClient struct {
	*slack.Client
	http   *http.Client
	token  string
	update string // the chat.update endpoint
}

var _ messageUpdater = (*SlackClient)(nil)

// NewSlackClient returns the client of token at apiURL (slack-go's
// default when empty) over hc (http.DefaultClient when nil).
func NewSlackClient(token, apiURL string, hc *http.Client) *SlackClient {
	if hc == nil {
		hc = http.DefaultClient
	}
	opts := []slack.Option{slack.OptionHTTPClient(hc)}
	if apiURL != "" {
		opts = append(opts, slack.OptionAPIURL(apiURL))
	} else {
		apiURL = slack.APIURL
	}
	return &SlackClient{Client: slack.New(token, opts...), http: hc, token: token, update: apiURL + "chat.update"}
}

// maxSlackAnswer bounds how much of Slack's answer to a chat.update is
// read: it echoes the message, at most a few hundred KB.
const maxSlackAnswer = 4 << 20

// UpdateMessageLean replaces the text and blocks of the message at
// channelID/timestamp: the request slack-go's UpdateMessageContext sends
// (form fields channel, ts, text, blocks; the token as a bearer header),
// and its errors as slack-go makes them — *slack.RateLimitedError for a 429
// with Retry-After, slack.StatusCodeError for another status,
// slack.SlackErrorResponse for ok:false — so Retry and the fallbacks treat
// both alike. Of the answer it decodes only ok and error.
func (c *SlackClient) UpdateMessageLean(ctx context.Context, channelID, timestamp, text string, blocks []slack.Block) error {
	if blocks == nil {
		blocks = []slack.Block{}
	}
	b, err := json.Marshal(blocks)
	if err != nil {
		return fmt.Errorf("chat.update: blocks: %w", err)
	}
	form := url.Values{"channel": {channelID}, "ts": {timestamp}, "text": {text}, "blocks": {string(b)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.update, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
		secs, err := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64)
		if err != nil {
			return fmt.Errorf("chat.update: Retry-After %q: %w", resp.Header.Get("Retry-After"), err)
		}
		return &slack.RateLimitedError{RetryAfter: time.Duration(secs) * time.Second}
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxSlackAnswer))
		return slack.StatusCodeError{Code: resp.StatusCode, Status: resp.Status}
	}
	var answer struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxSlackAnswer)).Decode(&answer); err != nil {
		return fmt.Errorf("chat.update: malformed answer: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxSlackAnswer)) // so the connection is reused
	if !answer.OK && strings.TrimSpace(answer.Error) != "" {
		return slack.SlackErrorResponse{Err: answer.Error}
	}
	return nil
}
