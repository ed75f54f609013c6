package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/store"
)

// minimalDB is the Redis database of the minimal click path's records:
// the same approvals as slackbot's (same tokens, created the same way by
// prepareClicks), so one click body decides one call in each.
const minimalDB = 3

// minimalDecide is the one script of the minimal click path: it records an
// approval on a pending call of a record written by store.Create (first
// decision wins), with the result the waiting run receives, and returns
// what the decided card shows.
// KEYS: the record. ARGV: call id, by, now (ms), result.
var minimalDecide = redis.NewScript(`
local i = redis.call('HGET', KEYS[1], 'i:' .. ARGV[1])
if not i then return {'e:notfound'} end
local p = 'c' .. i .. '.'
if redis.call('HGET', KEYS[1], 'state') ~= 'open' or redis.call('HGET', KEYS[1], p .. 'st') ~= 'pending' then
  return {'e:decided'}
end
redis.call('HSET', KEYS[1], p .. 'st', 'approved', p .. 'by', ARGV[2], p .. 'at', ARGV[3], p .. 'res', ARGV[4], 'state', 'resolved', 'left', '0')
local f = redis.call('HMGET', KEYS[1], p .. 'tool', p .. 'args', 'requester', 'channel', 'created', 'exp', p .. 'route', p .. 'ch', p .. 'ts')
table.insert(f, 1, 'ok')
return f
`)

// minimalClick is what the minimal path reads of a block_actions payload.
type minimalClick struct {
	User struct {
		ID string `json:"id"`
	} `json:"user"`
	Actions []struct {
		ActionID string `json:"action_id"`
		Value    string `json:"value"`
	} `json:"actions"`
}

// serveMinimal is the second baseline, the minimal full click path, run as
// a child process (clickbench minimal-serve) like slackbot: written as
// plainly as possible, it verifies the Slack signature (bot.VerifySlack,
// as slackbot does), decodes the click (encoding/json, only the fields it
// needs), records the decision with one EVALSHA (minimalDecide), answers
// 200, then renders the decided card (bot.ApprovalBlocks, as slackbot
// sends it) and posts one chat.update to the fake Slack, reading only ok
// and error of its answer. The update runs after the answer, on a
// goroutine of its own, at most minimalUpdates at once: a click whose
// update finds them all busy holds its handler until one is free, so the
// updates keep up with the clicks and each click's work is done within
// the phase that sent it. It reads BENCH_REDIS_URL, BENCH_SECRET,
// SLACK_API_URL and SLACK_BOT_TOKEN and prints its address.
func serveMinimal(stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opt, err := redis.ParseURL(os.Getenv("BENCH_REDIS_URL"))
	if err != nil {
		return fmt.Errorf("BENCH_REDIS_URL: %w", err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	secret := os.Getenv("BENCH_SECRET")
	slackURL, slackToken := os.Getenv("SLACK_API_URL"), os.Getenv("SLACK_BOT_TOKEN")
	if secret == "" || slackURL == "" || slackToken == "" {
		return errors.New("BENCH_SECRET, SLACK_API_URL and SLACK_BOT_TOKEN must be set")
	}
	m := &minimal{rdb: rdb, updates: make(chan struct{}, minimalUpdates), slackURL: strings.TrimSuffix(slackURL, "/") + "/chat.update", slackToken: slackToken,
		slack: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 100}}}
	mux := http.NewServeMux()
	mux.Handle("POST /slack/interactivity", bot.VerifySlack(secret, slog.New(slog.DiscardHandler), m))
	return serveUntilDone(ctx, stdout, "minimal", mux)
}

// approvedResult is the result an approval records for the waiting run.
var approvedResult = func() string {
	b, _ := json.Marshal(agentrunner.Approve())
	return string(b)
}()

// minimalUpdates bounds the minimal path's card updates in flight.
const minimalUpdates = 128

// minimal is the minimal click path's handler.
type minimal struct {
	rdb        *redis.Client
	updates    chan struct{}
	slack      *http.Client
	slackURL   string
	slackToken string
}

func (m *minimal) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var click minimalClick
	if err := json.Unmarshal([]byte(r.PostFormValue("payload")), &click); err != nil || len(click.Actions) != 1 {
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	token, callID, err := bot.DecodeAction(click.Actions[0].Value)
	if err != nil {
		http.Error(w, "bad action", http.StatusBadRequest)
		return
	}
	now := time.Now()
	res, err := minimalDecide.Run(r.Context(), m.rdb, []string{store.DefaultPrefix + "a:" + token},
		callID, click.User.ID, now.UnixMilli(), approvedResult).StringSlice()
	if err != nil {
		http.Error(w, "redis: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if res[0] != "ok" {
		return // already decided: the card shows it
	}
	m.updates <- struct{}{}
	go func() {
		defer func() { <-m.updates }()
		_ = m.update(context.Background(), token, callID, click.User.ID, now, res[1:])
	}()
}

// update posts the decided card: f is the script's fields after "ok".
func (m *minimal) update(ctx context.Context, token, callID, by string, at time.Time, f []string) error {
	ms := func(s string) time.Time { n, _ := strconv.ParseInt(s, 10, 64); return time.UnixMilli(n) }
	card := bot.Card{
		Token: token, ToolCallID: callID, Kind: agentrunner.KindApproval, ToolName: f[0], Args: json.RawMessage(f[1]),
		Requester: f[2], RequesterIsUser: true, SourceChannel: f[3], Route: f[6],
		CreatedAt: ms(f[4]), ExpiresAt: ms(f[5]), RequiredApprovals: 1,
		State: approval.CallApproved, DecidedBy: by, DecidedAt: at,
	}
	blocks, err := json.Marshal(bot.ApprovalBlocks(card))
	if err != nil {
		return err
	}
	form := url.Values{"token": {m.slackToken}, "channel": {f[7]}, "ts": {f[8]}, "text": {bot.ApprovalText(card)}, "blocks": {string(blocks)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.slackURL, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := m.slack.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var ans struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		return err
	}
	if !ans.OK {
		return fmt.Errorf("chat.update: %s", ans.Error)
	}
	return nil
}

// startMinimal starts the minimal click path (minimal-serve) on the Redis
// at redisURL.
func (b *bench) startMinimal(name, redisURL string) (*process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	env := append(append([]string{}, b.env...), "BENCH_REDIS_URL="+redisURL, "BENCH_SECRET="+b.secret)
	return startProcess(name, self, []string{"minimal-serve"}, env)
}

// minimalTargets notes the targets against the minimal full click
// path at saturation: slackbot at least 0.7× its clicks/s and at most 1.5×
// its server CPU per click. sc and mc are the cores used by slackbot's and
// the minimal path's processes.
func (cr *clickRun) minimalTargets(rs, rm loadResult, sc, mc []float64) {
	if rs.PerSecond() == 0 || rm.PerSecond() == 0 {
		cr.t.note("Target vs the minimal full click path: not measured (no clicks acknowledged).")
		return
	}
	tput := rs.PerSecond() / rm.PerSecond()
	cpu := (sc[0] / rs.PerSecond()) / (mc[0] / rm.PerSecond())
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	cr.t.note("Target: clicks/s at saturation at least 0.7× the minimal full click path's: %s (%.2f×).", verdict(tput >= 0.7), tput)
	cr.t.note("Target: server CPU per click at most 1.5× the minimal full click path's: %s (%.2f×).", verdict(cpu <= 1.5), cpu)
}
