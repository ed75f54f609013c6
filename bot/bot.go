package bot

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/slackapprove/slackbot/approval"
)

// Config holds what a Bot needs.
type Config struct {
	Slack SlackAPI
	// Service is the approval pipeline clicks and forms decide through.
	Service *approval.Service
	// Cards is the Poster the Service posts with; the Bot renders the
	// forms of a card with it. Nil: cards over Slack and the Service's
	// routes, knowing no tools.
	Cards *Cards
	// Usergroups is the Directory the Service authorizes with; Close waits
	// for its lookups. Nil: none to wait for.
	Usergroups *Usergroups
	// TeamID is this workspace's team id (from auth.test).
	TeamID string
	Log    *slog.Logger
	Retry  Retry
	Now    func() time.Time
	// Metrics is told about decisions and Slack errors; nil records
	// nothing. Refusals are the Service's to count.
	Metrics Metrics
	// EnterpriseID is the Enterprise Grid organization's id (from
	// auth.test), empty outside Grid: events and clicks from other
	// workspaces of the same organization are accepted too.
	EnterpriseID string
	// AckBudget bounds the work done on an interaction before it is
	// acknowledged (usergroup lookups, the store); 0 means
	// DefaultAckBudget. Tests shorten it.
	AckBudget time.Duration
	// Passkeys are the step-up pages' credentials (package stepup's
	// Handler): App Home lists them, and an Approve that needs step-up
	// is answered with a link to PublicURL's page. Nil: App Home shows no
	// passkeys, and such an Approve is told that step-up is not set up.
	Passkeys Passkeys
	// PublicURL is slackbot's public base URL (PUBLIC_URL), where the
	// step-up pages are served; "": none.
	PublicURL string
}

// Metrics receives the events operators watch: the Service's (decisions,
// refusals by code), the Slack calls that failed, Slack's 429s (each
// attempt Slack rate limited, by method, whether or not the call then
// succeeded: a 429 waited out and followed by success is not an error,
// but it is what tells that slackbot runs near Slack's limits), and the
// answers posted
// without looking for an earlier post because Slack refused the look-up
// (reason: its error code), each of which may be a duplicate.
type Metrics interface {
	approval.Metrics
	SlackError(method string)
	SlackRateLimited(method string)
	AnswerUnchecked(reason string)
}

type noMetrics struct{}

func (noMetrics) Decision(string, string, time.Duration) {}
func (noMetrics) Refused(string)                         {}
func (noMetrics) SlackError(string)                      {}
func (noMetrics) SlackRateLimited(string)                {}
func (noMetrics) AnswerUnchecked(string)                 {}

// Bot is slackbot's Slack side for people: it turns clicks and form
// submissions (HandleInteraction) into approval.Service calls, and posts
// in threads. The cards themselves are Cards', which the Service drives.
type Bot struct {
	slack     SlackAPI
	svc       *approval.Service
	cards     *Cards
	groups    *Usergroups
	workspace Workspace
	ackBudget time.Duration
	log       *slog.Logger
	retry     Retry
	now       func() time.Time
	metrics   Metrics
	passkeys  Passkeys
	publicURL string

	// Work that follows an acknowledged request runs on goroutines owned
	// by the Bot, never on the request's context; Close waits for it.
	wg sync.WaitGroup
}

// New returns a Bot.
func New(cfg Config) *Bot {
	b := &Bot{
		slack: cfg.Slack, svc: cfg.Service, cards: cfg.Cards, groups: cfg.Usergroups,
		log: cfg.Log, retry: cfg.Retry, now: cfg.Now, metrics: cfg.Metrics,
		passkeys: cfg.Passkeys, publicURL: cfg.PublicURL,
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
	if b.svc == nil {
		b.svc = approval.New(approval.Config{Store: unavailableStore{}, Poster: nopPoster{}})
	}
	if b.cards == nil {
		b.cards = NewCards(CardsConfig{Slack: cfg.Slack, Routes: b.svc.Routes(), Retry: cfg.Retry, Metrics: b.metrics, Log: b.log})
	}
	b.ackBudget = cmp.Or(cfg.AckBudget, DefaultAckBudget)
	b.workspace = Workspace{TeamID: cfg.TeamID, EnterpriseID: cfg.EnterpriseID}
	return b
}

// Close waits for background work started by requests to finish: the
// Bot's, the Service's card updates, the usergroup lookups.
func (b *Bot) Close() {
	b.wg.Wait()
	b.svc.Close()
	if b.groups != nil {
		b.groups.Wait()
	}
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

// ephemeral tells one user something in a channel, visible only to them.
func (b *Bot) ephemeral(ctx context.Context, channel, user, text string) error {
	return b.ephemeralBlocks(ctx, channel, user, text, nil)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// unavailableStore is the store of a Bot built without a Service (a Bot
// that only posts in threads): every request is unknown to it.
type unavailableStore struct{ approval.Store }

func (unavailableStore) Get(context.Context, string) (*approval.Request, error) {
	return nil, approval.ErrNotFound
}

// nopPoster posts nothing.
type nopPoster struct{}

func (nopPoster) Post(context.Context, *approval.Request, *approval.Call) (approval.MessageRef, error) {
	return approval.MessageRef{}, errors.New("no poster")
}

func (nopPoster) Update(context.Context, *approval.Request, *approval.Call) (approval.MessageRef, error) {
	return approval.MessageRef{}, nil
}
