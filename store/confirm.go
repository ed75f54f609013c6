package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// Defaults of the replica confirmation (Options.WaitReplicas).
const (
	// DefaultWaitTimeout caps how long one write waits for its replicas.
	DefaultWaitTimeout = 500 * time.Millisecond
	// waitMargin is kept of the caller's deadline: Redis ends a WAIT at
	// its timeout only on its next timer tick (up to 1/hz = 100 ms late at
	// the default hz 10), and what follows the write (answering Slack or
	// the client) needs time too.
	waitMargin = 200 * time.Millisecond
)

// runConfirmed runs script for op and, with Options.WaitReplicas N > 0,
// sends WAIT N right after it (runWaited). It returns the script's reply
// and, when fewer than N replicas confirmed in time, an error wrapping
// approval.ErrUnconfirmed (the write is on the primary and may or may not
// survive a failover).
func (s *Store) runConfirmed(ctx context.Context, op string, notAfter time.Time, script *redis.Script, keys []string, args ...any) (*redis.Cmd, error) {
	cmd, notYet := s.runWaited(ctx, notAfter, script, keys, args...)
	if notYet != nil {
		return cmd, s.unconfirmed(op, notYet)
	}
	return cmd, nil
}

// runWaited runs script and, with Options.WaitReplicas N > 0, sends
// WAIT N <timeout> right after it on the same connection (one pipeline,
// one round trip): WAIT counts the replicas that acknowledged this
// connection's writes, so the script must write for the WAIT to cover
// what it read. It returns the script's reply and, when fewer than N
// replicas confirmed in time, an error saying how many did. The timeout
// is what ctx's deadline and notAfter (if not zero) leave, less a margin,
// at most Options.WaitTimeout and at least a millisecond (WAIT 0 would
// block for ever).
func (s *Store) runWaited(ctx context.Context, notAfter time.Time, script *redis.Script, keys []string, args ...any) (*redis.Cmd, error) {
	n := s.opts.WaitReplicas
	if n <= 0 {
		return script.Run(ctx, s.rdb, keys, args...), nil
	}
	var conn redis.Cmdable = s.rdb
	if cc, cluster := s.rdb.(*redis.ClusterClient); cluster {
		// A cluster client would send WAIT (no key) to any node: send
		// both to the client of the node that owns the keys' slot.
		node, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return script.Run(ctx, s.rdb, keys, args...), fmt.Errorf("0 of %d replicas confirmed: %w", n, err)
		}
		conn = node
	}
	run := func(eval func(p redis.Pipeliner) *redis.Cmd) (*redis.Cmd, *redis.IntCmd) {
		p := conn.Pipeline()
		cmd := eval(p)
		// Computed for each pipeline: a second one (NOSCRIPT) gets what
		// the first left of the budget.
		wait := redis.NewIntCmd(ctx, "wait", n, s.waitTimeout(ctx, notAfter).Milliseconds())
		_ = p.Process(ctx, wait)
		_, _ = p.Exec(ctx) // each command carries its own error
		return cmd, wait
	}
	cmd, wait := run(func(p redis.Pipeliner) *redis.Cmd { return script.EvalSha(ctx, p, keys, args...) })
	if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		// A new primary (a failover) or a flushed cache: send the body.
		cmd, wait = run(func(p redis.Pipeliner) *redis.Cmd { return script.Eval(ctx, p, keys, args...) })
	}
	if cmd.Err() != nil {
		return cmd, nil // the write's own error says it all
	}
	got, err := wait.Result()
	if err != nil {
		return cmd, fmt.Errorf("%d of %d replicas confirmed: %w", got, n, err)
	}
	if got < int64(n) {
		return cmd, fmt.Errorf("%d of %d replicas confirmed", got, n)
	}
	return cmd, nil
}

func (s *Store) waitTimeout(ctx context.Context, notAfter time.Time) time.Duration {
	timeout := s.opts.WaitTimeout
	deadline, ok := ctx.Deadline()
	if !notAfter.IsZero() && (!ok || notAfter.Before(deadline)) {
		deadline, ok = notAfter, true
	}
	if ok {
		timeout = min(timeout, time.Until(deadline)-waitMargin)
	}
	return max(timeout, time.Millisecond)
}

// unconfirmed counts an unconfirmed write of op and returns its error,
// saying why (cause).
func (s *Store) unconfirmed(op string, cause error) error {
	if s.opts.OnUnconfirmed != nil {
		s.opts.OnUnconfirmed(op)
	}
	return fmt.Errorf("%w (%v)", approval.ErrUnconfirmed, cause)
}

// The writes that wait for REDIS_WAIT_REPLICAS replicas, as
// Options.OnUnconfirmed names them.
const (
	OpCreate = "create"
	OpDecide = "decide"
	OpAnswer = "answer"
	OpCancel = "cancel"
	OpFail   = "fail"
)

// UnconfirmedOps lists every operation OnUnconfirmed may be told; metrics
// start each at zero, so the alert on unconfirmed writes has a series
// from start-up.
var UnconfirmedOps = []string{OpCreate, OpDecide, OpAnswer, OpCancel, OpFail}
