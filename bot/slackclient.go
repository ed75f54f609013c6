package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
// channelID/timestamp with the arguments slack-go's UpdateMessageContext
// sends (channel, ts, text, blocks), as a JSON body with the token as a
// bearer header (Slack takes both forms; JSON spares escaping the blocks
// into a form), and returns Slack's refusals as slack-go makes them —
// *slack.RateLimitedError for a 429 with Retry-After,
// slack.StatusCodeError for another status, slack.SlackErrorResponse for
// ok:false — so Retry and the fallbacks treat both alike. Of the answer
// it decodes only ok and error, and an answer that starts {"ok":true not
// at all.
func (c *SlackClient) UpdateMessageLean(ctx context.Context, channelID, timestamp, text string, blocks []slack.Block) error {
	if blocks == nil {
		blocks = []slack.Block{}
	}
	body, err := json.Marshal(updateRequest{Channel: channelID, TS: timestamp, Text: text, Blocks: blocks})
	if err != nil {
		return fmt.Errorf("chat.update: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.update, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// Read to the end (bounded) whatever happens, so the connection is reused.
	defer func() { _, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxSlackAnswer)) }()
	if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "" {
		secs, err := strconv.ParseInt(resp.Header.Get("Retry-After"), 10, 64)
		if err != nil {
			return fmt.Errorf("chat.update: Retry-After %q: %w", resp.Header.Get("Retry-After"), err)
		}
		return &slack.RateLimitedError{RetryAfter: time.Duration(secs) * time.Second}
	}
	if resp.StatusCode != http.StatusOK {
		return slack.StatusCodeError{Code: resp.StatusCode, Status: resp.Status}
	}
	return slackAnswerErr(resp.Body)
}

// updateRequest is the JSON body of a chat.update.
type updateRequest struct {
	Channel string        `json:"channel"`
	TS      string        `json:"ts"`
	Text    string        `json:"text"`
	Blocks  []slack.Block `json:"blocks"`
}

// okPrefix is how Slack's answers of success begin.
const okPrefix = `{"ok":true`

// slackAnswerErr reads ok and error of a Slack answer: nil for ok, a
// slack.SlackErrorResponse for ok:false with an error, as slack-go.
func slackAnswerErr(body io.Reader) error {
	var head [len(okPrefix)]byte
	n, err := io.ReadFull(body, head[:])
	if err == nil && string(head[:]) == okPrefix {
		return nil
	}
	var answer struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	dec := json.NewDecoder(io.MultiReader(bytes.NewReader(head[:n]), io.LimitReader(body, maxSlackAnswer)))
	if err := dec.Decode(&answer); err != nil {
		return fmt.Errorf("chat.update: malformed answer: %w", err)
	}
	if !answer.OK && strings.TrimSpace(answer.Error) != "" {
		return slack.SlackErrorResponse{Err: answer.Error}
	}
	return nil
}
