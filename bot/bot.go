package bot

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// Config holds what a Bot needs.
type Config struct {
	Slack SlackAPI
	// Approvals keeps the requests and records decisions (package store).
	Approvals approval.Store
	// Runs saves the runs that wait on a token, for durable resume; nil
	// saves nothing.
	Runs   RunSaver
	Routes *Routes
	// Runner supplies tools' confirmation texts and argument schemas.
	Runner *agentrunner.Runner
	// TeamID is this workspace's team id (from auth.test).
	TeamID string
	Log    *slog.Logger
	Retry  Retry
	Now    func() time.Time
	// Metrics is told about decisions, refusals and Slack errors; nil
	// records nothing.
	Metrics Metrics
	// EnterpriseID is the Enterprise Grid organization's id (from
	// auth.test), empty outside Grid: events and clicks from other
	// workspaces of the same organization are accepted too.
	EnterpriseID string
	// AckBudget bounds the work done on an interaction before it is
	// acknowledged (usergroup lookups, the store); 0 means
	// DefaultAckBudget. Tests shorten it.
	AckBudget time.Duration
}

// Metrics receives the events operators watch.
type Metrics interface {
	Decision(outcome string)
	Refused(reason string)
	SlackError(method string)
}

type noMetrics struct{}

func (noMetrics) Decision(string)   {}
func (noMetrics) Refused(string)    {}
func (noMetrics) SlackError(string) {}

// Bot is slackbot's Slack side: it posts approval cards for pending calls
// (Ask), handles the clicks on them (HandleInteraction), and keeps each
// card in step with its call.
type Bot struct {
	slack     SlackAPI
	approvals approval.Store
	runs      RunSaver
	routes    *Routes
	runner    *agentrunner.Runner
	auth      *Authorizer
	workspace Workspace
	ackBudget time.Duration
	log       *slog.Logger
	retry     Retry
	now       func() time.Time
	metrics   Metrics

	// Work that follows an acknowledged request runs on goroutines owned
	// by the Bot, never on the request's context; Close waits for it.
	wg sync.WaitGroup
}

// New returns a Bot.
func New(cfg Config) *Bot {
	b := &Bot{
		slack: cfg.Slack, approvals: cfg.Approvals, runs: cfg.Runs, routes: cfg.Routes, runner: cfg.Runner,
		log: cfg.Log, retry: cfg.Retry, now: cfg.Now, metrics: cfg.Metrics,
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.metrics == nil {
		b.metrics = noMetrics{}
	}
	b.ackBudget = cmp.Or(cfg.AckBudget, DefaultAckBudget)
	b.workspace = Workspace{TeamID: cfg.TeamID, EnterpriseID: cfg.EnterpriseID}
	b.auth = &Authorizer{TeamID: cfg.TeamID, EnterpriseID: cfg.EnterpriseID, Slack: cfg.Slack, Now: b.now}
	return b
}

// SetRunner gives the Bot the runner whose tools it shows (confirmation
// texts, argument schemas for edits). The runner's AskHandler usually
// calls b.Ask, so the two are built in this order.
func (b *Bot) SetRunner(r *agentrunner.Runner) { b.runner = r }

// Close waits for background work started by requests to finish.
func (b *Bot) Close() {
	b.wg.Wait()
	b.auth.Wait()
}

// goAsync runs f on a goroutine owned by the Bot with its own deadline,
// detached from the request that started it.
func (b *Bot) goAsync(ctx context.Context, what string, f func(ctx context.Context) error) {
	b.wg.Add(1)
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := f(ctx); err != nil {
			b.log.ErrorContext(ctx, what+" failed", "err", err)
		}
	}()
}

// route returns the route named name, or nil.
func (b *Bot) route(name string) *Route {
	if b.routes == nil {
		return nil
	}
	for _, r := range b.routes.Routes {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// toolLabel is how people see a tool: "<server>.<tool>" for a tool of one
// of the routing file's MCP servers (which the model calls
// "<server>__<tool>"), as the tool's confirmation names it; else its name.
func (b *Bot) toolLabel(name string) string {
	if b.routes == nil {
		return name
	}
	for _, m := range b.routes.MCPServers {
		if tool, ok := strings.CutPrefix(name, m.Name+"__"); ok && tool != "" {
			return m.Name + "." + tool
		}
	}
	return name
}

// card builds the view of one call for rendering.
func (b *Bot) card(a *approval.Request, c *approval.Call) Card {
	call, _ := a.Requests.Call(c.ID)
	args, err := call.ArgsObject()
	if err != nil {
		args = call.Args
	}
	card := Card{
		Token: a.Token, ToolCallID: c.ID, Kind: c.Kind, ToolName: call.ToolName, ToolLabel: b.toolLabel(call.ToolName), Args: args,
		Requester: a.Origin.Shown(), RequesterIsSlackUser: a.Origin.User != "",
		SourceChannel: a.Origin.Channel, Context: a.Context, Route: c.Route,
		CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, RequiredApprovals: max(c.Required, 1),
		Votes: c.Votes, State: c.Status, DecidedBy: c.DecidedBy, DecidedAt: c.DecidedAt,
		Reason: c.Why(), OverrideArgs: c.OverrideArgs(), Answer: c.Answer(), Outcome: c.Outcome,
		AllowDenyReason: c.Kind == agentrunner.KindApproval,
	}
	if r := b.route(c.Route); r != nil {
		card.Mentions = r.Usergroups
	}
	for _, p := range b.pendingViews(a.Requests) {
		if p.Call.ToolCallID == c.ID {
			card.Confirmation = p.Message
			if p.Message == agentrunner.DefaultConfirmation(p.Call) {
				p.Call.ToolName = card.ToolLabel
				card.Confirmation = agentrunner.DefaultConfirmation(p.Call)
			}
		}
	}
	if b.runner != nil {
		if _, ok := b.runner.Tool(call.ToolName); ok && c.Kind == agentrunner.KindApproval {
			card.AllowEdit = true
		}
	}
	return card
}

func (b *Bot) pendingViews(req agentrunner.DeferredToolRequests) []agentrunner.PendingToolCall {
	if b.runner != nil {
		return b.runner.PendingCalls(req)
	}
	var out []agentrunner.PendingToolCall
	for _, id := range req.IDs() {
		c, _ := req.Call(id)
		out = append(out, agentrunner.PendingToolCall{Call: c, Kind: req.Kind(id), Message: agentrunner.DefaultConfirmation(c)})
	}
	return out
}

// updateCard re-renders a call's card in place from its current state.
//
// The card is locked, its state read afresh, rendered and written, so
// concurrent updates from any processes end with the latest state on the
// card.
func (b *Bot) updateCard(ctx context.Context, a *approval.Request, c *approval.Call) error {
	release, err := b.approvals.Lock(ctx, "card:"+a.Token+":"+c.ID, 30*time.Second)
	if err != nil {
		return fmt.Errorf("update card: %w", err)
	}
	defer release()
	if fresh, err := b.approvals.Get(ctx, a.Token); err == nil {
		if fc := fresh.Call(c.ID); fc != nil {
			a, c = fresh, fc
		}
	}
	b.locateCard(ctx, a, c)
	return b.updateRendered(ctx, c.Message, b.card(a, c))
}

// locateCard finds a card whose message reference was never recorded —
// the process that posted it died between posting and recording — by its
// marker in the route channel's history, and records it.
func (b *Bot) locateCard(ctx context.Context, a *approval.Request, c *approval.Call) {
	if c.Message.TS != "" || c.Route == "" {
		return
	}
	route := b.route(c.Route)
	if route == nil {
		return
	}
	ref, err := b.findCard(ctx, route.Channel, cardMarker(a.Token, c.ID), a.CreatedAt.Add(-time.Minute))
	if err != nil || ref.TS == "" {
		return
	}
	c.Message = ref
	if err := b.approvals.SetMessage(ctx, a.Token, c.ID, ref); err != nil {
		b.log.WarnContext(ctx, "record a located card", "err", err)
	}
}

// updateRendered replaces the message at ref with card.
func (b *Bot) updateRendered(ctx context.Context, ref approval.MessageRef, card Card) error {
	if ref.Channel == "" || ref.TS == "" {
		return nil // never posted (or the post failed): nothing to update
	}
	update := func(blocks []slack.Block) error {
		return b.retry.Do(ctx, func(ctx context.Context) error {
			_, _, _, err := b.slack.UpdateMessageContext(ctx, ref.Channel, ref.TS,
				slack.MsgOptionText(ApprovalText(card), false),
				slack.MsgOptionBlocks(blocks...))
			return err
		})
	}
	err := update(ApprovalBlocks(card))
	if blocksRefused(err) {
		// Never leave a decided card with live buttons: say where the call
		// stands in as little as Slack accepts.
		b.metrics.SlackError("chat.update")
		b.log.WarnContext(ctx, "Slack refused a card; updating it with a minimal one", "channel", ref.Channel, "ts", ref.TS, "err", err)
		err = update(MinimalApprovalBlocks(card))
	}
	if err != nil {
		b.metrics.SlackError("chat.update")
		return fmt.Errorf("update card %s/%s: %w", ref.Channel, ref.TS, err)
	}
	return nil
}

// UpdateCards re-renders every card of a token, e.g. after it expired or
// was cancelled.
func (b *Bot) UpdateCards(ctx context.Context, token string) error {
	a, err := b.approvals.Get(ctx, token)
	if err != nil {
		return fmt.Errorf("update cards: %w", err)
	}
	var firstErr error
	for i := range a.Calls {
		if err := b.updateCard(ctx, a, &a.Calls[i]); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// ephemeral tells one user something in a channel, visible only to them.
func (b *Bot) ephemeral(ctx context.Context, channel, user, text string) error {
	err := b.retry.Do(ctx, func(ctx context.Context) error {
		_, err := b.slack.PostEphemeralContext(ctx, channel, user, slack.MsgOptionText(text, false))
		return err
	})
	if err != nil {
		b.metrics.SlackError("chat.postEphemeral")
	}
	return err
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
