package bot

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"golang.org/x/sync/singleflight"

	"github.com/slackapprove/slackbot/approval"
)

// Usergroups is the approval.Directory over Slack: who is in a usergroup,
// through a cache. usergroups.users.list
// is a Tier 2 method (about 20 calls a minute), and a click must be
// answered within Slack's three seconds, so:
//
//   - concurrent lookups of one usergroup are one call (singleflight);
//   - a lookup runs detached from the click that needed it, bounded by
//     lookupTimeout: a click that gives up at its deadline still leaves
//     the members in the cache for the next one;
//   - members older than TTL but younger than TTL+MaxStale are served at
//     once while they are looked up again in the background;
//   - a 429 is honoured: no call is made until its Retry-After has passed
//     (stale members are served meanwhile, whatever their age), and a
//     lookup waits out a short Retry-After once;
//   - Warm looks a route's usergroups up when its card is posted, before
//     anyone clicks.

type Usergroups struct {
	Slack SlackAPI
	// TTL is how long usergroup members are fresh; default 1 minute.
	TTL time.Duration
	// MaxStale is how long after TTL stale members are still served, at
	// once, while they are looked up again in the background; default 10
	// minutes. Past it a click waits for the lookup.
	MaxStale time.Duration
	Now      func() time.Time
	// Sleep waits for d or until ctx ends (Retry-After); nil means a real
	// timer. Tests inject it.
	Sleep func(ctx context.Context, d time.Duration) error
	// Metrics is told of each 429 (SlackRateLimited); nil: nothing.
	Metrics Metrics

	mu      sync.Mutex
	groups  map[string]groupEntry
	limited time.Time // usergroups.users.list is rate limited until then
	flight  singleflight.Group
	wg      sync.WaitGroup // lookups in flight
}

var _ approval.Directory = (*Usergroups)(nil)

// lookupTimeout bounds one lookup, retry included.
const lookupTimeout = 10 * time.Second

// maxRetryAfterWait is the longest Retry-After a lookup waits out (once)
// instead of failing.
const maxRetryAfterWait = 2 * time.Second

// errUsergroupsRateLimited: Slack asked for a pause in usergroup lookups
// and no members are cached.
var errUsergroupsRateLimited = errors.New("usergroups.users.list is rate limited and no members are cached")

type groupEntry struct {
	members []string
	fetched time.Time
}

type lookupResult struct {
	members []string
	err     error
}

func (a *Usergroups) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Usergroups) ttl() time.Duration {
	if a.TTL > 0 {
		return a.TTL
	}
	return time.Minute
}

func (a *Usergroups) maxStale() time.Duration {
	if a.MaxStale > 0 {
		return a.MaxStale
	}
	return 10 * time.Minute
}

// cached returns group's cache entry, whether there is one, and whether
// lookups are paused by a rate limit.
func (a *Usergroups) cached(group string) (groupEntry, bool, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.groups[group]
	return e, ok, a.now().Before(a.limited)
}

// Members implements approval.Directory: a usergroup's members: from the cache when fresh, or
// stale within bounds (refreshing it in the background), otherwise from
// a lookup it waits for until ctx ends.
func (a *Usergroups) Members(ctx context.Context, group string) ([]string, error) {
	e, ok, limited := a.cached(group)
	if ok {
		age := a.now().Sub(e.fetched)
		if age < a.ttl() {
			return e.members, nil
		}
		if limited || age < a.ttl()+a.maxStale() {
			if !limited {
				a.lookup(group)
			}
			return e.members, nil
		}
	}
	if limited {
		return nil, fmt.Errorf("usergroup %s members: %w", group, errUsergroupsRateLimited)
	}
	result := a.lookup(group)
	if ctx.Err() != nil {
		// A caller that cannot wait gets its context's error, whether or
		// not the lookup it started (for the next caller) is quick.
		return nil, fmt.Errorf("usergroup %s members: %w", group, context.Cause(ctx))
	}
	select {
	case r := <-result:
		return r.members, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("usergroup %s members: %w", group, context.Cause(ctx))
	}
}

// Warm looks up, in the background, the members of each group that are
// not fresh in the cache, so the first click on a card does not wait.
func (a *Usergroups) Warm(groups ...string) {
	for _, g := range groups {
		e, ok, limited := a.cached(g)
		if limited || ok && a.now().Sub(e.fetched) < a.ttl() {
			continue
		}
		a.lookup(g)
	}
}

// Wait waits for the lookups in flight.
func (a *Usergroups) Wait() { a.wg.Wait() }

// lookup joins (or starts) the one lookup of group in flight, on a
// goroutine of its own; the result arrives on the channel, which nobody
// has to read.
func (a *Usergroups) lookup(group string) <-chan lookupResult {
	out := make(chan lookupResult, 1)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		v, err, _ := a.flight.Do(group, func() (any, error) { return a.fetch(group) })
		members, _ := v.([]string)
		out <- lookupResult{members: members, err: err}
	}()
	return out
}

// fetch calls usergroups.users.list for group and caches the answer.
func (a *Usergroups) fetch(group string) ([]string, error) {
	// A lookup that ended just before this one started filled the cache.
	if e, ok, _ := a.cached(group); ok && a.now().Sub(e.fetched) < a.ttl() {
		return e.members, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		members, err := a.Slack.GetUserGroupMembersContext(ctx, group)
		if err == nil {
			a.mu.Lock()
			if a.groups == nil {
				a.groups = map[string]groupEntry{}
			}
			a.groups[group] = groupEntry{members: members, fetched: a.now()}
			a.mu.Unlock()
			return members, nil
		}
		var rl *slack.RateLimitedError
		if !errors.As(err, &rl) {
			return nil, fmt.Errorf("usergroup %s members: %w", group, err)
		}
		if a.Metrics != nil {
			a.Metrics.SlackRateLimited(MethodUsergroupsUsersList)
		}
		wait := max(rl.RetryAfter, time.Second)
		a.mu.Lock()
		if until := a.now().Add(wait); until.After(a.limited) {
			a.limited = until
		}
		a.mu.Unlock()
		if attempt > 1 || wait > maxRetryAfterWait {
			return nil, fmt.Errorf("usergroup %s members: %w", group, err)
		}
		sleep := a.Sleep
		if sleep == nil {
			sleep = sleepCtx
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("usergroup %s members: %w", group, err)
		}
	}
}
