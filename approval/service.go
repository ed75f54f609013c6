package approval

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/routing"
)

// Poster shows requests to people: one card per call, kept in step with
// the call. Package bot implements it over Slack.
type Poster interface {
	// Post posts the card of call c of r to the channel of c's route and
	// returns where it went. An error means the card was not posted.
	Post(ctx context.Context, r *Request, c *Call) (MessageRef, error)
	// Update re-renders the card of c from r in place and returns where
	// the card is: c.Message, or the card found when c.Message was never
	// recorded (its poster died between posting and recording); the zero
	// MessageRef when there is no card.
	Update(ctx context.Context, r *Request, c *Call) (MessageRef, error)
}

// Tools knows the agent's tools: their confirmation texts, for the cards,
// and their argument schemas, for edits. *agentrunner.Runner and
// *agentrunner.Toolbox implement it.
type Tools interface {
	Tool(name string) (*agentrunner.Tool, bool)
	PendingCalls(req agentrunner.DeferredToolRequests) []agentrunner.PendingToolCall
}

// Metrics receives what operators watch: decisions by route and outcome
// (one of Outcomes), refusals by error code (one of RefusalCodes). It is
// an interface so that approval does not import a metrics library
// (docs/ARCHITECTURE.md, "Import rules").
type Metrics interface {
	// Decision is told a call of route was decided or ended without a
	// decision, with outcome, waited after its request was opened;
	// waited is negative when the outcome is not timed (a policy's
	// decision, which no request holds, or a vote short of its quorum).
	Decision(route, outcome string, waited time.Duration)
	Refused(code string)
}

// Config is what a Service is built from. Store, Poster and Routes are
// required.
type Config struct {
	Store     Store
	Poster    Poster
	Directory Directory
	Routes    *routing.Routes
	// Tools, when set, checks edited arguments against the tool's schema.
	Tools Tools
	// Scheduler, when set, keeps the reminders and escalations that
	// routes ask for (Attend); nil: none are scheduled.
	Scheduler Scheduler
	// Grants, when set, keeps the grants of routes with grants: and
	// approves the calls they cover without a card; nil: no grants.
	Grants  GrantStore
	Metrics Metrics
	Log     *slog.Logger
	Now     func() time.Time
	// Resumed, when set, continues a run here as soon as this process ends
	// the run's request (see Resumed); nil leaves runs to whoever waits.
	Resumed Resumed
	// Confirmer, when set, applies the changes recorded while Redis's
	// replicas did not confirm them, once they do (Confirm).
	Confirmer Confirmer
}

// Service is the one approval pipeline and the only writer of requests:
// every way in (a run started in Slack, through Asker; the HTTP API, the
// MCP gateway) opens requests with Open, every way of deciding (a button,
// a form, an API answer) decides through Decide, and every decision or end
// without a person (policies, grants, failures, expiry) goes through the
// same path after recording (system.go).
type Service struct {
	store     Store
	poster    Poster
	dir       Directory
	routes    *routing.Routes
	tools     Tools
	scheduler Scheduler
	grants    GrantStore
	metrics   Metrics
	log       *slog.Logger
	now       func() time.Time
	resumed   Resumed
	confirmer Confirmer

	// Card updates that follow a decision run after the caller got its
	// answer (a click must be acknowledged within Slack's three seconds);
	// Close waits for them.
	wg sync.WaitGroup
}

// New returns a Service.
func New(cfg Config) *Service {
	s := &Service{
		store: cfg.Store, poster: cfg.Poster, dir: cfg.Directory, routes: cfg.Routes,
		tools: cfg.Tools, scheduler: cfg.Scheduler, grants: cfg.Grants, metrics: cfg.Metrics, log: cfg.Log, now: cfg.Now,
		resumed: cfg.Resumed, confirmer: cfg.Confirmer,
	}
	if s.routes == nil {
		s.routes = &routing.Routes{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.metrics == nil {
		s.metrics = noMetrics{}
	}
	if s.dir == nil {
		s.dir = noDirectory{}
	}
	return s
}

// Close waits for the card updates decisions started.
func (s *Service) Close() { s.wg.Wait() }

// Routes returns the routing the service routes by.
func (s *Service) Routes() *routing.Routes { return s.routes }

// Route returns the route named name, or nil.
func (s *Service) Route(name string) *routing.Route { return s.routes.Named(name) }

// Get returns the request of token (ENOTFOUND when there is none).
func (s *Service) Get(ctx context.Context, token string) (*Request, error) {
	return s.store.Get(ctx, token)
}

// later runs f after the caller's answer, on a goroutine the Service owns,
// detached from ctx's cancellation and bounded on its own.
func (s *Service) later(ctx context.Context, what string, f func(ctx context.Context) error) {
	s.wg.Add(1)
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := f(ctx); err != nil {
			s.log.ErrorContext(ctx, what+" failed", "err", err)
		}
	}()
}

// timeout is how long a call routed to r may wait.
func (s *Service) timeout(r *routing.Route) time.Duration {
	if r == nil {
		return cmp.Or(s.routes.DefaultTimeout, DefaultTimeout)
	}
	return cmp.Or(r.Timeout, s.routes.DefaultTimeout, DefaultTimeout)
}

type noMetrics struct{}

func (noMetrics) Decision(string, string, time.Duration) {}
func (noMetrics) Refused(string)                         {}

// noDirectory knows no usergroup: only users listed by id can decide.
type noDirectory struct{}

func (noDirectory) Members(context.Context, string) ([]string, error) { return nil, nil }
func (noDirectory) Warm(...string)                                    {}
