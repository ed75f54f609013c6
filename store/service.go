package store

import (
	"context"
	"time"

	"github.com/slackapprove/slackbot/approval"
)

// ServiceConfig returns cfg with the ports of approval.Service that the
// store provides filled in: the requests, the grants, the changes held
// while Redis's replicas did not confirm them, the reminders and
// escalations (scheduled on jobs), and the clock the store stamps with.
// The program and the test systems (internal/systest) both build their
// Service from it, so the two cannot wire the store in differently; the
// caller adds what is not Redis (the poster, the directory, the routes,
// the tools, metrics, the log, Resumed).
func (s *Store) ServiceConfig(cfg approval.Config, jobs *JobQueue) approval.Config {
	cfg.Store, cfg.Grants, cfg.Confirmer, cfg.Scheduler = s, s, s, jobs
	cfg.Now = s.opts.Now
	return cfg
}

// Sweeper expires the requests past their deadline and does what follows
// each end: approval.Service.Sweep.
type Sweeper interface {
	Sweep(ctx context.Context) ([]*approval.Request, error)
}

// DefaultHeartbeatEvery is how often a process that serves requests
// renews its liveness: one that dies stops renewing within 6s (the key
// lives three beats), and only then do other replicas take over the runs
// it waited on and the jobs it held.
const DefaultHeartbeatEvery = 2 * time.Second

// NewServiceTokens returns the Tokens of a process that serves requests:
// every SweepEvery it expires the due ones through sweeper (the Service,
// the only writer of requests, which queues the expired cards' update as a
// job in the same step), and it beats every DefaultHeartbeatEvery unless
// opts says otherwise. opts.Sweep is replaced.
func NewServiceTokens(s *Store, sweeper Sweeper, opts TokensOptions) *Tokens {
	opts.Sweep = func(ctx context.Context) error { _, err := sweeper.Sweep(ctx); return err }
	if opts.HeartbeatEvery <= 0 {
		opts.HeartbeatEvery = DefaultHeartbeatEvery
	}
	return NewTokens(s, opts)
}
