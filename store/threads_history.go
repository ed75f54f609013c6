package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// A Slack thread is one conversation with the agent: the message history
// of the thread's last finished run is kept under the thread, and the runs
// of one thread take turns through a lease and a queue.
//
// Keys, under the prefix: thread:<team>/<channel>/<ts>:h (the history,
// JSON), :l (the lease: the run id that holds the thread) and :q (the
// queued turns, a list of "<run id>|<payload>").

// Errors of the thread store.
var (
	// ErrThreadNotFound: no history is kept for the thread (never
	// answered, expired, or too large to keep).
	ErrThreadNotFound = errors.New("no history for the thread")
	// ErrThreadUndecodable: the thread's history is there but does not
	// decode (written by an incompatible version); start afresh.
	ErrThreadUndecodable = errors.New("thread history does not decode")
	// ErrThreadBusy: too many turns already wait in the thread's queue.
	ErrThreadBusy = errors.New("too many messages wait in the thread")
)

// Defaults of the thread options.
const (
	DefaultThreadTTL      = 7 * 24 * time.Hour
	DefaultThreadMaxBytes = 256 << 10
	// MaxThreadQueue bounds the turns waiting in one thread, so a flood of
	// mentions costs bounded memory.
	MaxThreadQueue = 50
	// maxThreadID bounds each part of a thread's key.
	maxThreadID = 64
)

// Thread names a Slack thread: the workspace, the channel and the thread's
// parent ts.
type Thread struct {
	Team, Channel, TS string
}

func (th Thread) check() error {
	if th.Channel == "" || th.TS == "" {
		return fmt.Errorf("%w: a thread needs a channel and a ts", approval.ErrInvalid)
	}
	for _, s := range []string{th.Team, th.Channel, th.TS} {
		if len(s) > maxThreadID || strings.ContainsAny(s, "/|: \t\r\n") {
			return fmt.Errorf("%w: bad thread id %q", approval.ErrInvalid, s)
		}
	}
	return nil
}

func (th Thread) String() string { return th.Team + "/" + th.Channel + "/" + th.TS }

func (s *Store) threadKey(th Thread, kind string) string {
	return s.key("thread:" + th.String() + ":" + kind)
}

func (s *Store) threadTTL() time.Duration {
	if s.opts.ThreadTTL > 0 {
		return s.opts.ThreadTTL
	}
	return DefaultThreadTTL
}

func (s *Store) threadMaxBytes() int {
	if s.opts.ThreadMaxBytes > 0 {
		return s.opts.ThreadMaxBytes
	}
	return DefaultThreadMaxBytes
}

// Threads keeps each Slack thread's conversation: its history, and the
// lease and queue its runs take turns by (threads_lease.go).
type Threads struct{ s *Store }

// Threads returns the store's thread conversations.
func (s *Store) Threads() Threads { return Threads{s} }

// SaveHistory keeps msgs as the thread's history for the store's
// ThreadTTL, replacing the earlier one. A history larger than
// ThreadMaxBytes (as JSON) loses its oldest turns (TrimHistory); one whose
// last turn alone is too large is not kept, and the thread's next run
// starts afresh. It reports how many messages it kept.
func (t Threads) SaveHistory(ctx context.Context, th Thread, msgs []agentrunner.Message) (int, error) {
	s := t.s
	if err := th.check(); err != nil {
		return 0, fmt.Errorf("save thread history: %w", err)
	}
	kept, b, err := TrimHistory(msgs, s.threadMaxBytes())
	if err != nil {
		return 0, fmt.Errorf("save thread history %s: %w", th, err)
	}
	key := s.threadKey(th, "h")
	if len(kept) == 0 {
		err = s.rdb.Del(ctx, key).Err()
	} else {
		err = s.rdb.Set(ctx, key, b, s.threadTTL()).Err()
	}
	if err != nil {
		return 0, fmt.Errorf("save thread history %s: %w", th, err)
	}
	return len(kept), nil
}

// History returns the thread's history, ErrThreadNotFound when
// none is kept, or ErrThreadUndecodable when it no longer decodes.
func (t Threads) History(ctx context.Context, th Thread) ([]agentrunner.Message, error) {
	s := t.s
	if err := th.check(); err != nil {
		return nil, fmt.Errorf("load thread history: %w", err)
	}
	b, err := s.rdb.Get(ctx, s.threadKey(th, "h")).Bytes()
	if isRedisNil(err) {
		return nil, fmt.Errorf("load thread history %s: %w", th, ErrThreadNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load thread history %s: %w", th, err)
	}
	var msgs []agentrunner.Message
	if err := json.Unmarshal(b, &msgs); err != nil {
		return nil, fmt.Errorf("load thread history %s: %w: %w", th, ErrThreadUndecodable, err)
	}
	return msgs, nil
}

// TrimHistory returns the newest whole turns of msgs whose JSON fits in
// maxBytes, and that JSON. A turn starts at a request that holds only
// prompts (no tool return, no retry), so a tool call is never cut from its
// return. When even the last turn does not fit it returns nothing.
func TrimHistory(msgs []agentrunner.Message, maxBytes int) ([]agentrunner.Message, []byte, error) {
	b, err := json.Marshal(msgs)
	if err != nil || len(b) <= maxBytes {
		return msgs, b, err
	}
	// The size of msgs[i:] as a JSON array: the messages, commas, brackets.
	sizes := make([]int, len(msgs)+1)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, err := json.Marshal(msgs[i])
		if err != nil {
			return nil, nil, err
		}
		sizes[i] = sizes[i+1] + len(m) + 1
	}
	for i := 1; i < len(msgs); i++ {
		if !startsTurn(msgs[i]) || sizes[i]+1 > maxBytes {
			continue
		}
		kept := msgs[i:]
		b, err := json.Marshal(kept)
		return kept, b, err
	}
	return nil, nil, nil
}

// startsTurn reports whether m is a user's new message: a request of
// prompts only.
func startsTurn(m agentrunner.Message) bool {
	if m.Kind != agentrunner.KindRequest {
		return false
	}
	prompt := false
	for _, p := range m.Parts {
		switch p.PartKind {
		case agentrunner.PartUserPrompt:
			prompt = true
		case agentrunner.PartSystemPrompt:
		default:
			return false
		}
	}
	return prompt
}
