package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// This file keeps step-up links (approval.StepUpLink): the single-use
// permission, for one approver, to approve the calls it names once they
// give a step-up proof (a passkey). A link is one string key holding its
// JSON, named by the link's secret id, kept StepUpLinkGrace past its
// expiry so that a late use is told "expired" rather than "unknown"
// (approval checks the expiry by its clock); taking it reads and deletes
// it in one script, so a link is used once however many replicas race.
// The approval service decides what a link allows; the store only keeps it.

// StepUpLinkGrace is how long a link is kept past its expiry.
const StepUpLinkGrace = time.Minute

func (s *Store) stepUpLinkKey(id string) string { return s.key("stepup:" + id) }

// validLinkID accepts what approval makes: 32 random bytes, base64url.
func validLinkID(id string) bool {
	b, err := base64.RawURLEncoding.DecodeString(id)
	return err == nil && len(b) == 32 && base64.RawURLEncoding.EncodeToString(b) == id
}

// stepUpLinkJSON is a link as stored: the JSON names are the record's,
// read by every replica of a rolling deploy.
type stepUpLinkJSON struct {
	ID           string              `json:"id"`
	Team         string              `json:"team,omitempty"`
	User         string              `json:"user"`
	Token        string              `json:"token"`
	Calls        []stepUpCallJSON    `json:"calls"`
	GrantMS      int64               `json:"grant_ms,omitempty"`
	AlwaysAllow  bool                `json:"always_allow,omitempty"`
	OverrideArgs json.RawMessage     `json:"override_args,omitempty"`
	Batch        bool                `json:"batch,omitempty"`
	Home         bool                `json:"home,omitempty"`
	Message      approval.MessageRef `json:"message,omitzero"`
	Methods      []string            `json:"methods"`
	Expires      time.Time           `json:"expires"`
}

type stepUpCallJSON struct {
	CallID     string `json:"call"`
	ArgsDigest string `json:"args"`
}

// SaveStepUpLink implements approval.StepUpStore: it stores l until
// StepUpLinkGrace past l.Expires. It returns EINVALID for a link with a
// malformed id, no approver, token or calls, or already expired.
func (s *Store) SaveStepUpLink(ctx context.Context, l *approval.StepUpLink) error {
	ttl := l.Expires.Sub(s.now()) + StepUpLinkGrace
	if !validLinkID(l.ID) || l.User == "" || !validToken(l.Token) || len(l.Calls) == 0 || ttl <= StepUpLinkGrace {
		return fmt.Errorf("save step-up link: %w: a link needs an id, an approver, a request, calls and an expiry to come", approval.ErrInvalid)
	}
	w := stepUpLinkJSON{ID: l.ID, Team: l.Team, User: l.User, Token: l.Token, GrantMS: l.Grant.Milliseconds(), AlwaysAllow: l.AlwaysAllow,
		OverrideArgs: l.OverrideArgs, Batch: l.Batch, Home: l.Home, Message: l.Message, Methods: l.Methods, Expires: l.Expires.UTC()}
	for _, c := range l.Calls {
		w.Calls = append(w.Calls, stepUpCallJSON{CallID: c.CallID, ArgsDigest: c.ArgsDigest})
	}
	b, err := json.Marshal(w)
	if err != nil {
		return fmt.Errorf("save step-up link: %w", err)
	}
	// NX: an id is random, so a collision is a bug; never overwrite.
	ok, err := s.rdb.SetNX(ctx, s.stepUpLinkKey(l.ID), b, ttl).Result()
	if err != nil {
		return fmt.Errorf("save step-up link: %w", err)
	}
	if !ok {
		return fmt.Errorf("save step-up link: %w", approval.ErrConflict)
	}
	return nil
}

// StepUpLink implements approval.StepUpStore: the link, not used; ENOTFOUND
// when it is unknown, used or gone.
func (s *Store) StepUpLink(ctx context.Context, id string) (*approval.StepUpLink, error) {
	if !validLinkID(id) {
		return nil, fmt.Errorf("step-up link: %w", approval.ErrNotFound)
	}
	b, err := s.rdb.Get(ctx, s.stepUpLinkKey(id)).Bytes()
	if isRedisNil(err) {
		return nil, fmt.Errorf("step-up link: %w", approval.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("step-up link: %w", err)
	}
	return parseStepUpLink(b)
}

// takeLinkScript reads and deletes a link in one step. KEYS: the link.
var takeLinkScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then redis.call('DEL', KEYS[1]) end
return v
`)

// TakeStepUpLink implements approval.StepUpStore: it reads and deletes the
// link atomically, so exactly one caller gets it; ENOTFOUND when it is
// unknown, used or gone.
func (s *Store) TakeStepUpLink(ctx context.Context, id string) (*approval.StepUpLink, error) {
	if !validLinkID(id) {
		return nil, fmt.Errorf("take step-up link: %w", approval.ErrNotFound)
	}
	v, err := takeLinkScript.Run(ctx, s.rdb, []string{s.stepUpLinkKey(id)}).Text()
	if isRedisNil(err) {
		return nil, fmt.Errorf("take step-up link: %w", approval.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("take step-up link: %w", err)
	}
	return parseStepUpLink([]byte(v))
}

func parseStepUpLink(b []byte) (*approval.StepUpLink, error) {
	var w stepUpLinkJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("step-up link: %w", err)
	}
	l := &approval.StepUpLink{ID: w.ID, Team: w.Team, User: w.User, Token: w.Token, Grant: time.Duration(w.GrantMS) * time.Millisecond,
		AlwaysAllow: w.AlwaysAllow, OverrideArgs: w.OverrideArgs, Batch: w.Batch, Home: w.Home, Message: w.Message, Methods: w.Methods, Expires: w.Expires}
	for _, c := range w.Calls {
		l.Calls = append(l.Calls, approval.StepUpCall{CallID: c.CallID, ArgsDigest: c.ArgsDigest})
	}
	return l, nil
}
