package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// TokensOptions configures Tokens. The zero value is usable.
type TokensOptions struct {
	// Owner names this process in claims and waiter registrations; it must
	// differ between processes. Default: a random id.
	Owner string
	// SweepEvery is how often Run expires due tokens; default 1s, negative
	// disables sweeping in this process (another replica must sweep).
	SweepEvery time.Duration
	// RecheckEvery is how often Run re-reads the state of every token
	// waited on here, in one pipeline, as a safety net for a notification
	// lost while the subscription was down; default 30s.
	RecheckEvery time.Duration
	// HeartbeatEvery is how often Run renews this process's liveness key,
	// which tells resume-queue consumers to leave the runs waited on here
	// alone; default 5s, and the key lives three times as long.
	HeartbeatEvery time.Duration
	// ClaimTTL is how long a resume claim holds; default the store's Grace.
	ClaimTTL time.Duration
	// Sweep, when set, is what Run calls every SweepEvery to expire the
	// tokens past their deadline: approval.Service.Sweep, the only writer
	// of requests, which does what follows each expiry. nil: this process
	// expires nothing (another replica must sweep).
	Sweep func(ctx context.Context) error
	// Logger logs errors of Run's background work; default slog.Default().
	Logger *slog.Logger
}

// Tokens is the Redis-backed waiting side of requests, behind
// approval.RunTokens (the runner's TokenWaiter) and the HTTP API's long
// polls: a run waiting in one process is woken when any process resolves,
// cancels, fails or expires its token.
//
// Each process runs one Tokens and its Run method: one pub/sub connection
// carries the notifications of every token, and a local map dispatches
// them to the goroutines blocked in WaitEnded or Await, so ten thousand waiters share one
// connection. A waiter re-reads the token's state when woken, Run re-reads
// every waited token after each (re)subscription and periodically, so a
// notification lost to a reconnect delays a wake-up but never loses it.
//
// Tokens writes no request: approval.Service creates and ends them (it is
// agentrunner.AskHandler's Asker). With an AskHandler, Tokens is the
// store behind the Waiter (approval.RunTokens, which hands the run its
// results): for a run that waits in place, Watch registers this process as
// the token's waiter once the request is recorded and before its cards are
// posted, then WaitEnded waits; Keep claims the run of an ask that failed.
// Any token may be waited on with WaitEnded or Await (the HTTP API's long
// poll).
//
// A run is resumed at most once: it continues in the process that waited
// for it if that process is alive, otherwise from the resume queue
// (see ResumeQueue). WaitEnded claims the resumption (Store.ClaimResume)
// before returning an answer and returns ErrClaimed if another process took it.
type Tokens struct {
	s    *Store
	opts TokensOptions
	log  *slog.Logger

	mu      sync.Mutex
	waiters map[string]map[*waiter]struct{}

	ready     chan struct{}
	readyOnce sync.Once
}

var _ approval.TokenStore = (*Tokens)(nil)

type waiter struct{ wake chan struct{} }

// NewTokens returns the Tokens of this process on s. Call Run for waiters
// to be woken.
func NewTokens(s *Store, opts TokensOptions) *Tokens {
	if opts.Owner == "" {
		opts.Owner = agentrunner.NewToken()[:16]
	}
	if opts.SweepEvery == 0 {
		opts.SweepEvery = time.Second
	}
	if opts.RecheckEvery <= 0 {
		opts.RecheckEvery = 30 * time.Second
	}
	if opts.HeartbeatEvery <= 0 {
		opts.HeartbeatEvery = 5 * time.Second
	}
	if opts.ClaimTTL <= 0 {
		opts.ClaimTTL = s.opts.Grace
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Tokens{
		s:       s,
		opts:    opts,
		log:     log,
		waiters: map[string]map[*waiter]struct{}{},
		ready:   make(chan struct{}),
	}
}

// Owner returns the name of this process in claims.
func (e *Tokens) Owner() string { return e.opts.Owner }

// Ready is closed once Run has subscribed to notifications.
func (e *Tokens) Ready() <-chan struct{} { return e.ready }

// Watch is agentrunner.TokenWatcher's (through approval.RunTokens): it registers this process
// as the waiter of token, whose run waits on it in place, so that no other
// process resumes the run while this one lives (ClaimDirect, the resume
// queue). It writes only the registration, and only on an open request.
func (e *Tokens) Watch(ctx context.Context, token string) error {
	if err := watchScript.Run(ctx, e.s.rdb, []string{e.s.recKey(token)}, e.opts.Owner).Err(); err != nil {
		return fmt.Errorf("watch %s: %w", short(token), err)
	}
	return nil
}

// Keep is agentrunner.TokenWatcher's (through approval.RunTokens): it claims the resumption of
// token's run for this process, whose ask failed: the run ends here with
// the error, so neither a direct resume nor the resume queue takes it.
func (e *Tokens) Keep(ctx context.Context, token string) error {
	ok, err := e.s.claim(ctx, token, e.opts.Owner, e.opts.ClaimTTL, true)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("claim %s: %w", short(token), ErrClaimed)
	}
	return nil
}

// watchScript registers a token's waiter (Watch).
// KEYS: rec. ARGV: owner.
var watchScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'state') ~= 'open' then return 0 end
redis.call('HSET', KEYS[1], 'waiter', ARGV[1])
return 1
`)

// WaitEnded blocks until token ends, then claims the resumption of its
// run for this process and returns the ended request
// (approval.TokenStore: approval.RunTokens hands the run its results). It
// returns approval.ErrNotFound if the token is unknown or gone, ErrClaimed
// if another process resumed the run, and ctx's error when ctx ends first
// (the token stays open, and the resume queue takes over its run).
// Waiters are woken by Run.
func (e *Tokens) WaitEnded(ctx context.Context, token string) (*approval.Request, error) {
	return e.wait(ctx, token, true)
}

// Await blocks until token ends and returns its record, without claiming
// anything: for observers such as the HTTP API's long poll. It returns
// approval.ErrNotFound if the token is unknown or gone, and ctx's error when ctx
// ends first.
func (e *Tokens) Await(ctx context.Context, token string) (*approval.Request, error) {
	return e.wait(ctx, token, false)
}

func (e *Tokens) wait(ctx context.Context, token string, claim bool) (*approval.Request, error) {
	if !validToken(token) {
		return nil, fmt.Errorf("wait %s: %w", short(token), approval.ErrNotFound)
	}
	w := &waiter{wake: make(chan struct{}, 1)}
	e.add(token, w)
	defer e.remove(token, w)
	// Registering locally before looking at the token means a
	// notification sent in between is not lost: it finds the waiter.
	register := claim
	for {
		a, err := e.look(ctx, token, register, claim)
		if err != nil && ctx.Err() != nil {
			// The look may have registered this process as the waiter
			// before ctx ended: Redis ran it, the client gave up on the
			// answer.
			e.leave(ctx, token, claim)
			return nil, ctx.Err()
		}
		if err != nil || a != nil {
			return a, err
		}
		register = false
		select {
		case <-w.wake:
		case <-ctx.Done():
			e.leave(ctx, token, claim)
			return nil, ctx.Err()
		}
	}
}

// leave leaves the run of token to the resume queue when a wait that
// claims it ends with ctx: it drops this process's waiter registration,
// which would otherwise keep the queue deferring to a waiter that is gone.
func (e *Tokens) leave(ctx context.Context, token string, claim bool) {
	if !claim {
		return
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = unwatchScript.Run(uctx, e.s.rdb, []string{e.s.recKey(token)}, e.opts.Owner).Err()
}

// look runs waitScript: it returns a nil record while the token is open,
// the ended record (claimed for this process if claim is set), or an
// error.
func (e *Tokens) look(ctx context.Context, token string, register, claim bool) (*approval.Request, error) {
	keys := []string{e.s.recKey(token), e.s.claimKey(token), e.s.resumeKey()}
	res, err := waitScript.Run(ctx, e.s.rdb, keys, e.opts.Owner, e.opts.ClaimTTL.Milliseconds(), resumeGroup, flag(register), flag(claim), e.s.procKey("")).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("wait %s: %w", short(token), err)
	}
	switch res[0] {
	case "open":
		return nil, nil
	case "gone":
		return nil, fmt.Errorf("wait %s: %w", short(token), approval.ErrNotFound)
	case "lost":
		return nil, fmt.Errorf("wait %s: %w", short(token), ErrClaimed)
	}
	a, err := e.s.parseApproval(token, flatMap(res[1:]))
	if err != nil {
		return nil, fmt.Errorf("wait %s: %w", short(token), err)
	}
	return a, nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func (e *Tokens) add(token string, w *waiter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ws := e.waiters[token]
	if ws == nil {
		ws = map[*waiter]struct{}{}
		e.waiters[token] = ws
	}
	ws[w] = struct{}{}
}

func (e *Tokens) remove(token string, w *waiter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.waiters[token], w)
	if len(e.waiters[token]) == 0 {
		delete(e.waiters, token)
	}
}

// notify wakes every local waiter of token.
func (e *Tokens) notify(token string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for w := range e.waiters[token] {
		select {
		case w.wake <- struct{}{}:
		default: // already has a wake-up pending
		}
	}
}

// waiting returns how many goroutines wait in this process.
func (e *Tokens) waiting() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ws := range e.waiters {
		n += len(ws)
	}
	return n
}

// Run subscribes to notifications and dispatches them to local waiters,
// sweeps expired tokens every SweepEvery, renews this process's liveness
// every HeartbeatEvery and re-reads waited tokens after every
// (re)subscription and every RecheckEvery. It returns nil when ctx ends.
// Run it once per process, on a goroutine owned by main.
func (e *Tokens) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	wg.Go(func() { e.maintain(ctx) })

	ps := e.s.rdb.Subscribe(ctx, e.s.channel())
	defer ps.Close()
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelSize(4096))
	recheck := time.NewTicker(e.opts.RecheckEvery)
	defer recheck.Stop()
	rechecking := make(chan struct{}, 1)
	startRecheck := func() {
		select {
		case rechecking <- struct{}{}:
			wg.Go(func() {
				defer func() { <-rechecking }()
				e.recheck(ctx)
			})
		default: // one is running; it reads the current state anyway
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			switch m := m.(type) {
			case *redis.Message:
				e.notify(m.Payload)
			case *redis.Subscription:
				if m.Kind == "subscribe" {
					e.readyOnce.Do(func() { close(e.ready) })
					startRecheck()
				}
			}
		case <-recheck.C:
			startRecheck()
		}
	}
}

// maintain sweeps and renews the heartbeat until ctx ends, then removes
// the heartbeat so consumers take over this process's runs at once.
func (e *Tokens) maintain(ctx context.Context) {
	hb := time.NewTicker(e.opts.HeartbeatEvery)
	defer hb.Stop()
	var sweep <-chan time.Time
	if e.opts.SweepEvery > 0 && e.opts.Sweep != nil {
		t := time.NewTicker(e.opts.SweepEvery)
		defer t.Stop()
		sweep = t.C
	}
	e.heartbeat(ctx)
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = e.s.rdb.Del(dctx, e.s.procKey(e.opts.Owner)).Err()
			cancel()
			return
		case <-hb.C:
			e.heartbeat(ctx)
		case <-sweep:
			if err := e.opts.Sweep(ctx); err != nil && ctx.Err() == nil {
				e.log.ErrorContext(ctx, "sweep expired tokens", "err", err)
			}
		}
	}
}

func (e *Tokens) heartbeat(ctx context.Context) {
	err := e.s.rdb.Set(ctx, e.s.procKey(e.opts.Owner), "1", 3*e.opts.HeartbeatEvery).Err()
	if err != nil && ctx.Err() == nil {
		e.log.ErrorContext(ctx, "renew process heartbeat", "owner", e.opts.Owner, "err", err)
	}
}

// recheckBatch is how many token states one pipeline reads.
const recheckBatch = 1000

// recheck reads the state of every token waited on here and wakes the
// waiters of those that ended or vanished.
func (e *Tokens) recheck(ctx context.Context) {
	e.mu.Lock()
	tokens := make([]string, 0, len(e.waiters))
	for t := range e.waiters {
		tokens = append(tokens, t)
	}
	e.mu.Unlock()
	for len(tokens) > 0 {
		batch := tokens[:min(len(tokens), recheckBatch)]
		tokens = tokens[len(batch):]
		cmds := make([]*redis.StringCmd, len(batch))
		_, err := e.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, t := range batch {
				cmds[i] = p.HGet(ctx, e.s.recKey(t), "state")
			}
			return nil
		})
		if err != nil && !isRedisNil(err) {
			if ctx.Err() == nil {
				e.log.ErrorContext(ctx, "recheck waited tokens", "err", err)
			}
			return
		}
		for i, cmd := range cmds {
			if st, err := cmd.Result(); isRedisNil(err) || (err == nil && st != redisOpen) {
				e.notify(batch[i])
			}
		}
	}
}

// waitScript is a waiter's look at its token, one round trip per wake-up.
// While the token is open it returns {'open'}, registering owner as the
// process waiting on it if register is '1'. Once the token ended it
// returns {'ended', record...}; with claim '1' it first claims the
// resumption of the run for owner, takes the run's job off the resume
// queue and drops the waiter registration, and returns {'lost'} if another
// process holds the claim. A missing token gives {'gone'}.
// KEYS: rec, claim, resume. ARGV: owner, claim ttl (ms), group, register,
// claim, heartbeat key prefix.
var waitScript = redis.NewScript(claimLua + `
local st = redis.call('HGET', KEYS[1], 'state')
if not st then return {'gone'} end
if st == 'open' then
  if ARGV[4] == '1' then redis.call('HSET', KEYS[1], 'waiter', ARGV[1]) end
  return {'open'}
end
if ARGV[5] == '1' then
  if not claim(KEYS[2], ARGV[1], ARGV[2], ARGV[6]) then return {'lost'} end
  takeOver(KEYS[1], ARGV[1])
end
local r = redis.call('HGETALL', KEYS[1])
table.insert(r, 1, 'ended')
return r
`)

// unwatchScript removes owner's waiter registration.
// KEYS: rec. ARGV: owner.
var unwatchScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'waiter') == ARGV[1] then redis.call('HDEL', KEYS[1], 'waiter') end
return 1
`)
