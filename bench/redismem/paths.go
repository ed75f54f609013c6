package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/routing"
	"github.com/slackapprove/slackbot/runs"
	"github.com/slackapprove/slackbot/store"
)

const (
	team      = "T0FAKE"
	requester = "U0CAROL"
	general   = "C0GENERAL"
)

// routes sends every call to one approvals channel.
const routes = `
routes:
  - name: files
    channel: C0APPROVALS
    approvers: {users: [U0ALICE, U0BOB]}
`

// env is slackbot's pipeline on the measured Redis: the store (default
// prefix, so key names weigh what they do in production), this process's
// Tokens and the Service posting cards to the fake Slack.
type env struct {
	prefix string
	st     *store.Store
	tokens *store.Tokens
	svc    *approval.Service
	close  func()
}

func newEnv(ctx context.Context, rdb redisClient, fake *slackfake.Server, slackURL string) (*env, error) {
	st := store.New(rdb, store.Options{})
	ctx, cancel := context.WithCancel(ctx)
	tokens := store.NewTokens(st, store.TokensOptions{Owner: "redismem", SweepEvery: -1})
	done := make(chan struct{})
	go func() { defer close(done); _ = tokens.Run(ctx) }()
	stop := func() { cancel(); <-done }
	select {
	case <-tokens.Ready():
	case <-time.After(10 * time.Second):
		stop()
		return nil, errors.New("tokens: not subscribed within 10s")
	}
	rt, err := routing.ParseRoutes([]byte(routes), "redismem-routes.yaml")
	if err != nil {
		stop()
		return nil, err
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	api := slack.New(fake.Token(), slack.OptionAPIURL(slackURL), slack.OptionHTTPClient(hc))
	svc := approval.New(approval.Config{
		Store: st, Poster: bot.NewCards(bot.CardsConfig{Slack: api, Routes: rt}),
		Directory: &bot.Usergroups{Slack: api}, Routes: rt,
	})
	return &env{prefix: store.DefaultPrefix, st: st, tokens: tokens, svc: svc, close: stop}, nil
}

// deleteArgs are the ~200 B of arguments of the call that needs approval.
const deleteArgs = `{"paths":["/srv/reports/2025/q1-revenue-final.xlsx","/srv/reports/2025/q1-revenue-draft-v2.xlsx","/srv/reports/2025/q1-costs.csv"],"reason":"superseded by the audited 2025 annual report","dry_run":false}`

// historyModel is the scripted model of the measured runs: a first turn
// that lists files (a tool that runs at once), then a call to delete three
// of them, which needs approval.
var historyModel = agentrunner.FunctionModel(func(ctx context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
	resp := agentrunner.Message{Kind: agentrunner.KindResponse, ModelName: "claude-sonnet-4-5", Timestamp: time.Now()}
	switch responses(msgs) {
	case 0:
		resp.Parts = []agentrunner.Part{
			agentrunner.Text("I'll look at what is in the 2025 reports folder first."),
			agentrunner.ToolCall("list_files", json.RawMessage(`{"dir":"/srv/reports/2025"}`), "toolu_01A9pQm3xV7cK2"),
		}
	default:
		resp.Parts = []agentrunner.Part{
			agentrunner.Text("Three of these are superseded by the audited annual report. Deleting them needs an approval."),
			agentrunner.ToolCall("delete_files", json.RawMessage(deleteArgs), "toolu_01B7wRt5yN2dH8"),
		}
	}
	return resp, nil
})

func responses(msgs []agentrunner.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Kind == agentrunner.KindResponse {
			n++
		}
	}
	return n
}

// createSlackRuns parks n runs as slackbot does for app_mentions, writing
// the bot's own keys for each (the event's dedupe key, the thread lease).
func createSlackRuns(ctx context.Context, e *env, n int) error {
	type listArgs struct {
		Dir string `json:"dir"`
	}
	type deleteFiles struct {
		Paths  []string `json:"paths"`
		Reason string   `json:"reason"`
		DryRun bool     `json:"dry_run"`
	}
	tools := []*agentrunner.Tool{
		agentrunner.NewTool("list_files", "List a folder.", func(context.Context, *agentrunner.ToolContext, listArgs) (any, error) {
			return []string{"q1-revenue-final.xlsx", "q1-revenue-draft-v2.xlsx", "q1-costs.csv", "annual-2025-audited.pdf"}, nil
		}),
		agentrunner.NewTool("delete_files", "Delete files.", func(context.Context, *agentrunner.ToolContext, deleteFiles) (any, error) {
			return "deleted", nil
		}, agentrunner.RequiresApproval()),
	}
	// events gets nil for each run parked, an error for a run that ended.
	events := make(chan error, 2*n)
	ask := &agentrunner.AskHandler{Waiter: approval.RunTokens{TokenStore: e.tokens}, Deadline: e.svc.Deadline, Asker: toldAsker{e.svc.Asker(e.st), events}}
	runner, err := agentrunner.NewRunner(historyModel, tools, agentrunner.WithHandlers(ask))
	if err != nil {
		return err
	}
	runCtx, stopRuns := context.WithCancel(ctx)
	defer stopRuns()
	// At most 32 runs are between start and parked at once.
	const inFlight = 32
	got := 0
	next := func() error {
		got++
		return <-events
	}
	for i := range n {
		if i >= inFlight {
			if err := next(); err != nil {
				return err
			}
		}
		ts := fmt.Sprintf("1764600000.%06d", i)
		runID := agentrunner.NewToken()
		if err := botKeys(ctx, e.st, "Ev0REDISMEM"+strconv.Itoa(i), ts, runID); err != nil {
			return err
		}
		go func() {
			deps := &runs.Deps{Origin: approval.Origin{Team: team, Channel: general, ThreadTS: ts, User: requester}}
			res, err := runner.Run(runCtx, agentrunner.RunInput{Prompt: "<@U0BOT> please clean up the superseded Q1 2025 reports", Deps: deps, RunID: runID})
			if runCtx.Err() == nil {
				events <- fmt.Errorf("run %d ended while it should wait: %v, %w", i, res, err)
			}
		}()
	}
	for got < n {
		if err := next(); err != nil {
			return err
		}
	}
	// A run registers as its token's waiter just after its ask returns.
	time.Sleep(500 * time.Millisecond)
	return nil
}

// botKeys writes what bot.Events and runs.Runs write in Redis for a run started by an
// app_mention besides the ask path: the event's dedupe key and the
// thread's lease, held until the run's deadline.
func botKeys(ctx context.Context, st *store.Store, eventID, ts, runID string) error {
	if _, err := st.Dedupe(ctx, "event:"+eventID, bot.EventDedupeTTL); err != nil {
		return err
	}
	th := store.Thread{Team: team, Channel: general, TS: ts}
	if _, err := st.Threads().Enter(ctx, th, store.ThreadTurn{RunID: runID, Payload: []byte(`{}`)}, runs.DefaultThreadLease); err != nil {
		return err
	}
	_, err := st.Threads().Hold(ctx, th, runID, time.Hour)
	return err
}

// createAPIRequests opens n requests as the HTTP API does for POST
// /v1/approvals with an idempotency key and a callback URL.
func createAPIRequests(ctx context.Context, e *env, n int) error {
	sem := make(chan struct{}, 32)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := openAPI(ctx, e, i); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	return nil
}

func openAPI(ctx context.Context, e *env, i int) error {
	token := agentrunner.NewToken()
	key := "deploy-" + strconv.Itoa(i)
	if _, _, err := e.st.ClaimIdempotency(ctx, "ci", key, token, "fp0123456789abcdef", time.Minute); err != nil {
		return err
	}
	req := agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{{
		ToolName: "delete_files", Args: json.RawMessage(deleteArgs), ToolCallID: "call_" + strconv.Itoa(i),
	}}}
	o := approval.Opening{
		Token: token, Requests: req, Origin: approval.Origin{Client: "ci", Name: "nightly-cleanup"},
		Context:     "Nightly cleanup of superseded reports",
		CallbackURL: "https://ci.example.com/hooks/approvals",
	}
	if _, err := e.svc.Open(ctx, o); err != nil {
		return fmt.Errorf("open %d: %w", i, err)
	}
	return e.st.KeepIdempotency(ctx, "ci", key, token)
}

// toldAsker is an Asker that sends the outcome of each ask to events.
type toldAsker struct {
	agentrunner.Asker
	events chan<- error
}

func (a toldAsker) Ask(ctx context.Context, rc *agentrunner.RunContext, ask agentrunner.Asking) error {
	err := a.Asker.Ask(ctx, rc, ask)
	a.events <- err
	return err
}
