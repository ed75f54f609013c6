package store

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// streamQueue is what ResumeQueue and CallbackQueue share: a Redis stream
// with one consumer group, created on first use and again when the stream
// expired with it, read with XREADGROUP, taken over with XAUTOCLAIM and
// acknowledged by deleting the entries.
type streamQueue struct {
	s     *Store
	key   string // the stream
	group string // its consumer group
	// noun names the queue in errors ("resume", "callback").
	noun string
	// count bounds the entries one read or reclaim returns.
	count int64
	// pages bounds the XAUTOCLAIM calls of one reclaim.
	pages int
	ready atomic.Bool // the consumer group is known to exist
}

func (q *streamQueue) ensureGroup(ctx context.Context) error {
	if q.ready.Load() {
		return nil
	}
	if err := groupScript.Run(ctx, q.s.rdb, []string{q.key}, q.group, q.s.opts.Retention.Milliseconds()).Err(); err != nil {
		return fmt.Errorf("create %s group: %w", q.noun, err)
	}
	q.ready.Store(true)
	return nil
}

func isNoGroup(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOGROUP") }

// read returns new entries for consumer, waiting up to block for one (zero
// or less: not at all), and none with a nil error when none arrived.
func (q *streamQueue) read(ctx context.Context, consumer string, block time.Duration) ([]redis.XMessage, error) {
	if err := q.ensureGroup(ctx); err != nil {
		return nil, err
	}
	if block <= 0 {
		block = -1
	}
	args := &redis.XReadGroupArgs{
		Group:    q.group,
		Consumer: consumer,
		Streams:  []string{q.key, ">"},
		Count:    q.count,
		Block:    block,
	}
	streams, err := q.s.rdb.XReadGroup(ctx, args).Result()
	if isNoGroup(err) {
		// The stream expired with its group; recreate and retry once.
		q.ready.Store(false)
		if err := q.ensureGroup(ctx); err != nil {
			return nil, err
		}
		streams, err = q.s.rdb.XReadGroup(ctx, args).Result()
	}
	if isRedisNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s queue: %w", q.noun, err)
	}
	var msgs []redis.XMessage
	for _, st := range streams {
		msgs = append(msgs, st.Messages...)
	}
	return msgs, nil
}

// reclaim takes over for consumer the entries delivered more than minIdle
// ago and not acknowledged: up to count of them, scanning at most pages
// pages of the pending list. A stream that expired with its group has
// none.
func (q *streamQueue) reclaim(ctx context.Context, consumer string, minIdle time.Duration) ([]redis.XMessage, error) {
	if err := q.ensureGroup(ctx); err != nil {
		return nil, err
	}
	var msgs []redis.XMessage
	start := "0-0"
	for range q.pages {
		batch, next, err := q.s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream:   q.key,
			Group:    q.group,
			Consumer: consumer,
			MinIdle:  minIdle,
			Start:    start,
			Count:    q.count,
		}).Result()
		if isNoGroup(err) {
			q.ready.Store(false)
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reclaim %s jobs: %w", q.noun, err)
		}
		msgs = append(msgs, batch...)
		if next == "0-0" || next == "" || int64(len(msgs)) >= q.count {
			break
		}
		start = next
	}
	return msgs, nil
}

// ack acknowledges the entries ids and deletes them from the stream.
func (q *streamQueue) ack(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := q.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.XAck(ctx, q.key, q.group, ids...)
		p.XDel(ctx, q.key, ids...)
		return nil
	})
	if err != nil {
		return fmt.Errorf("ack %s jobs: %w", q.noun, err)
	}
	return nil
}

// deadIdle is how long a dead consumer's job must have been idle before
// ReclaimDead takes it: XCLAIM's idle check makes the takeover exclusive
// (it resets the idle time, so a second reclaimer finds the job busy).
const deadIdle = time.Second

// pendingScan bounds the pending entries one ReclaimDead looks at. Live
// consumers hold at most a read's worth each, so dead consumers' jobs are
// among the first; Reclaim finds any beyond.
const pendingScan = 1000

// reclaimDead takes over for consumer the entries pending with consumers
// whose process heartbeat is gone (the consumer is named as its
// process's Tokens Owner), at most count of them. Each entry is taken
// over by one reclaimer however many race.
func (q *streamQueue) reclaimDead(ctx context.Context, consumer string) ([]redis.XMessage, error) {
	if err := q.ensureGroup(ctx); err != nil {
		return nil, err
	}
	pending, err := q.s.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: q.key, Group: q.group, Start: "-", End: "+", Count: pendingScan,
	}).Result()
	if isNoGroup(err) {
		q.ready.Store(false)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list pending %s jobs: %w", q.noun, err)
	}
	byOwner := map[string][]string{}
	for _, p := range pending {
		if p.Consumer != consumer && p.Idle >= deadIdle {
			byOwner[p.Consumer] = append(byOwner[p.Consumer], p.ID)
		}
	}
	if len(byOwner) == 0 {
		return nil, nil
	}
	owners := make([]string, 0, len(byOwner))
	alive := make([]*redis.IntCmd, 0, len(byOwner))
	_, err = q.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for o := range byOwner {
			owners = append(owners, o)
			alive = append(alive, p.Exists(ctx, q.s.procKey(o)))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("check %s consumers: %w", q.noun, err)
	}
	var ids []string
	for i, o := range owners {
		if alive[i].Val() == 0 {
			ids = append(ids, byOwner[o]...)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	ids = ids[:min(len(ids), int(q.count))]
	msgs, err := q.s.rdb.XClaim(ctx, &redis.XClaimArgs{
		Stream: q.key, Group: q.group, Consumer: consumer, MinIdle: deadIdle, Messages: ids,
	}).Result()
	if err != nil && !isRedisNil(err) {
		return nil, fmt.Errorf("reclaim %s jobs of dead consumers: %w", q.noun, err)
	}
	return msgs, nil
}

// groupScript creates the resume consumer group (reading from the start
// of the stream, so jobs queued before the group existed are not lost)
// and gives the stream a TTL.
// KEYS: resume. ARGV: group, retention (ms).
var groupScript = redis.NewScript(`
redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], '0', 'MKSTREAM')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)
