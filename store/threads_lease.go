package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// The runs of one thread take turns: a lease (:l) names the run that holds
// the thread, and the turns that arrive meanwhile wait in a list (:q) as
// "<run id>|<payload>". Entering with the lease free takes it; leaving
// hands it to the first queued turn in the same script, so no turn is lost
// or runs beside another. A lease whose holder died lapses, and the next
// turn to enter picks up the queue in order before itself.

// enterThreadScript: KEYS lease, queue; ARGV entry, run id, lease ms,
// queue max, queue ttl ms. Returns the entry to run now, or "" when the
// entry was queued, or false when the queue is full.
var enterThreadScript = redis.NewScript(`
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[2] then return ARGV[1] end
local n = redis.call('LLEN', KEYS[2])
if holder then
  if n >= tonumber(ARGV[4]) then return false end
  redis.call('RPUSH', KEYS[2], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
  return ''
end
local entry = ARGV[1]
if n > 0 then
  redis.call('RPUSH', KEYS[2], entry)
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
  entry = redis.call('LPOP', KEYS[2])
end
local id = string.sub(entry, 1, string.find(entry, '|', 1, true) - 1)
redis.call('SET', KEYS[1], id, 'PX', ARGV[3])
return entry
`)

// leaveThreadScript: KEYS lease, queue; ARGV run id, lease ms. Returns the
// next entry, now holding the lease, or false when none waits.
var leaveThreadScript = redis.NewScript(`
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return false end
local entry = redis.call('LPOP', KEYS[2])
if not entry then
  if holder then redis.call('DEL', KEYS[1]) end
  return false
end
local id = string.sub(entry, 1, string.find(entry, '|', 1, true) - 1)
redis.call('SET', KEYS[1], id, 'PX', ARGV[2])
return entry
`)

// renewThreadScript: KEYS lease; ARGV run id, lease ms. Extends the lease
// of its holder to at least lease ms; never shortens it.
var renewThreadScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
`)

// ThreadTurn is a message waiting for, or holding, its thread: the run id
// it runs as and the caller's payload (e.g. the prompt and its author).
type ThreadTurn struct {
	RunID   string
	Payload []byte
}

// Enter asks for the thread for turn. When the thread is free it
// returns the turn that runs now, holding the lease for leaseTTL: turn
// itself, or the oldest turn queued while the lease was lapsing (turn then
// waits behind it). When another run holds the thread it queues turn and
// returns nil. A full queue returns ErrThreadBusy; a run id that is empty
// or holds '|' returns approval.ErrInvalid.
func (t Threads) Enter(ctx context.Context, th Thread, turn ThreadTurn, leaseTTL time.Duration) (*ThreadTurn, error) {
	s := t.s
	if err := th.check(); err != nil {
		return nil, fmt.Errorf("enter thread: %w", err)
	}
	if turn.RunID == "" || strings.Contains(turn.RunID, "|") {
		return nil, fmt.Errorf("enter thread %s: %w: bad run id %q", th, approval.ErrInvalid, turn.RunID)
	}
	keys := []string{s.threadKey(th, "l"), s.threadKey(th, "q")}
	entry := turn.RunID + "|" + string(turn.Payload)
	v, err := enterThreadScript.Run(ctx, s.rdb, keys, entry, turn.RunID, durMS(leaseTTL), MaxThreadQueue, durMS(s.threadTTL())).Text()
	if isRedisNil(err) {
		return nil, fmt.Errorf("enter thread %s: %w", th, ErrThreadBusy)
	}
	if err != nil {
		return nil, fmt.Errorf("enter thread %s: %w", th, err)
	}
	if v == "" {
		return nil, nil
	}
	return parseTurn(v), nil
}

// Leave ends runID's hold on the thread and hands the lease, for
// leaseTTL, to the oldest queued turn, which it returns (nil when none
// waits; the thread is then free). A runID that does not hold the lease
// changes nothing, unless the lease lapsed: then it hands the queue on too.
func (t Threads) Leave(ctx context.Context, th Thread, runID string, leaseTTL time.Duration) (*ThreadTurn, error) {
	s := t.s
	if err := th.check(); err != nil {
		return nil, fmt.Errorf("leave thread: %w", err)
	}
	keys := []string{s.threadKey(th, "l"), s.threadKey(th, "q")}
	v, err := leaveThreadScript.Run(ctx, s.rdb, keys, runID, durMS(leaseTTL)).Text()
	if isRedisNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("leave thread %s: %w", th, err)
	}
	return parseTurn(v), nil
}

// Hold extends runID's lease on the thread to at least ttl (never
// shortening it): a heartbeat while the run works, or the token's deadline
// while it waits for people. It reports whether runID holds the lease.
func (t Threads) Hold(ctx context.Context, th Thread, runID string, ttl time.Duration) (bool, error) {
	s := t.s
	if err := th.check(); err != nil {
		return false, fmt.Errorf("hold thread: %w", err)
	}
	n, err := renewThreadScript.Run(ctx, s.rdb, []string{s.threadKey(th, "l")}, runID, durMS(ttl)).Int()
	if err != nil {
		return false, fmt.Errorf("hold thread %s: %w", th, err)
	}
	return n == 1, nil
}

func parseTurn(entry string) *ThreadTurn {
	id, payload, _ := strings.Cut(entry, "|")
	return &ThreadTurn{RunID: id, Payload: []byte(payload)}
}

func durMS(d time.Duration) int64 { return max(d.Milliseconds(), 1) }
