package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Step-up's credentials (package stepup's Store port, adapted in
// cmd/slackbot): each person's passkeys and TOTP secret in one hash,
// pk:<team>:<user>, and single-use registration links, pkreg:<id>.
//
// A person's hash holds, per passkey id, c:<id> (the credential as JSON,
// its name and when it was added), n:<id> (its signature counter) and
// u:<id> (when it was last used, ms); and totp, totp_at, totp_step for a
// TOTP secret. Unlike a request, what it holds outlives any call: it
// expires PasskeyTTL after its last change or use, so an account nobody
// uses for that long is forgotten, and every key still has a TTL.

// PasskeyTTL is how long a person's passkeys are kept after their last
// registration or use.
const PasskeyTTL = 400 * 24 * time.Hour

// Errors of the passkey store.
var (
	// ErrPasskeyLimit: the person already has MaxPasskeys passkeys.
	ErrPasskeyLimit = errors.New("passkey limit reached")
	// ErrPasskeyGone: the passkey is not registered (removed meanwhile).
	ErrPasskeyGone = errors.New("passkey not registered")
	// ErrSignCount: a use whose signature counter did not advance.
	ErrSignCount = errors.New("signature counter did not advance")
	// ErrPasskeyExists: the person has a passkey with this id already;
	// it is kept as it was.
	ErrPasskeyExists = errors.New("passkey already registered")
)

// MaxPasskeys is how many passkeys one person may register.
const MaxPasskeys = 10

// StoredPasskey is a passkey as the store keeps it.
type StoredPasskey struct {
	ID, Name        string
	Credential      json.RawMessage
	SignCount       uint32
	Added, LastUsed time.Time
}

// Registration is a single-use registration link.
type Registration struct {
	ID, Token  string
	Team, User string
	Expires    time.Time
}

func (s *Store) passkeysKey(team, user string) string { return s.key("pk:" + team + ":" + user) }
func (s *Store) registrationKey(id string) string     { return s.key("pkreg:" + id) }

// person checks the ids a key is made of: Slack's ids never hold the
// separator.
func person(team, user string) error {
	if team == "" || user == "" || strings.ContainsAny(team+user, ":{}") {
		return fmt.Errorf("passkeys: bad team or user id")
	}
	return nil
}

type storedCred struct {
	Name       string          `json:"name"`
	Credential json.RawMessage `json:"cred"`
	Added      int64           `json:"added"`
}

// Passkeys returns the person's passkeys, oldest first.
func (s *Store) Passkeys(ctx context.Context, team, user string) ([]StoredPasskey, error) {
	if err := person(team, user); err != nil {
		return nil, err
	}
	m, err := s.rdb.HGetAll(ctx, s.passkeysKey(team, user)).Result()
	if err != nil {
		return nil, fmt.Errorf("passkeys: %w", err)
	}
	var out []StoredPasskey
	for k, v := range m {
		id, ok := strings.CutPrefix(k, "c:")
		if !ok {
			continue
		}
		var c storedCred
		if err := json.Unmarshal([]byte(v), &c); err != nil {
			return nil, fmt.Errorf("passkeys: credential %s: %w", id, err)
		}
		n, _ := strconv.ParseUint(m["n:"+id], 10, 32)
		out = append(out, StoredPasskey{ID: id, Name: c.Name, Credential: c.Credential, SignCount: uint32(n),
			Added: time.UnixMilli(c.Added), LastUsed: fromMS(m["u:"+id])})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Added.Equal(out[j].Added) {
			return out[i].Added.Before(out[j].Added)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// AddPasskey registers p; ErrPasskeyLimit when the person has MaxPasskeys
// already; ErrPasskeyExists, changing nothing, when they have p.ID
// already: a registration never replaces a credential (its key, its
// counter), so that one that slipped past the page's checks cannot reset
// a counter or swap a public key.
func (s *Store) AddPasskey(ctx context.Context, team, user string, p StoredPasskey) error {
	if err := person(team, user); err != nil {
		return err
	}
	if p.ID == "" || strings.ContainsAny(p.ID, ":") {
		return fmt.Errorf("add passkey: bad id")
	}
	v, err := json.Marshal(storedCred{Name: p.Name, Credential: p.Credential, Added: p.Added.UnixMilli()})
	if err != nil {
		return fmt.Errorf("add passkey: %w", err)
	}
	n, err := passkeyAddScript.Run(ctx, s.rdb, []string{s.passkeysKey(team, user)},
		p.ID, v, p.SignCount, MaxPasskeys, PasskeyTTL.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("add passkey: %w", err)
	}
	switch n {
	case 0:
		return ErrPasskeyLimit
	case -1:
		return ErrPasskeyExists
	}
	return nil
}

// passkeyAddScript adds a passkey unless the person has the most already.
// KEYS: the person's hash. ARGV: id, credential JSON, sign count, limit,
// ttl (ms). Returns 1, 0 at the limit, or -1 when the id is there already.
var passkeyAddScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], 'c:' .. ARGV[1]) == 1 then return -1 end
local n = 0
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(f, 1, 2) == 'c:' then n = n + 1 end
end
if n >= tonumber(ARGV[4]) then return 0 end
redis.call('HSET', KEYS[1], 'c:' .. ARGV[1], ARGV[2], 'n:' .. ARGV[1], ARGV[3])
redis.call('HDEL', KEYS[1], 'u:' .. ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`)

// RemovePasskey forgets the passkey; false when there was none.
func (s *Store) RemovePasskey(ctx context.Context, team, user, id string) (bool, error) {
	if err := person(team, user); err != nil {
		return false, err
	}
	n, err := removeCredentialScript.Run(ctx, s.rdb, []string{s.passkeysKey(team, user)}, ms(s.now()), "c:"+id, "n:"+id, "u:"+id).Int()
	if err != nil {
		return false, fmt.Errorf("remove passkey: %w", err)
	}
	return n > 0, nil
}

// removeCredentialScript deletes the fields of one of a person's
// credentials and, when there was one, notes when in the field
// "removed" (LastRemoval), in the same step.
// KEYS: the person's hash. ARGV: now (ms), the fields.
var removeCredentialScript = redis.NewScript(`
local n = redis.call('HDEL', KEYS[1], unpack(ARGV, 2))
if n > 0 then redis.call('HSET', KEYS[1], 'removed', ARGV[1]) end
return n
`)

// LastRemoval returns when the person last removed a passkey or their
// TOTP secret: zero when never (or longer ago than their credentials
// are kept). Package stepup holds a first registration back for a while
// after it (stepup.RecoveryDelay).
func (s *Store) LastRemoval(ctx context.Context, team, user string) (time.Time, error) {
	if err := person(team, user); err != nil {
		return time.Time{}, err
	}
	v, err := s.rdb.HGet(ctx, s.passkeysKey(team, user), "removed").Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("last removal: %w", err)
	}
	return fromMS(v), nil
}

// UsePasskey records a use of the passkey with the authenticator's
// signature counter, atomically: the counter must advance past the one
// recorded unless both are 0 (an authenticator that keeps none), else
// ErrSignCount, so that two uses racing with one counter value do not
// both pass; ErrPasskeyGone when it was removed.
func (s *Store) UsePasskey(ctx context.Context, team, user, id string, signCount uint32, at time.Time) error {
	if err := person(team, user); err != nil {
		return err
	}
	n, err := passkeyUseScript.Run(ctx, s.rdb, []string{s.passkeysKey(team, user)},
		id, signCount, ms(at), PasskeyTTL.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("use passkey: %w", err)
	}
	switch n {
	case 0:
		return ErrPasskeyGone
	case -1:
		return ErrSignCount
	}
	return nil
}

// passkeyUseScript: KEYS: the person's hash. ARGV: id, sign count, at
// (ms), ttl (ms). Returns 1, 0 (no such passkey) or -1 (counter did not
// advance).
var passkeyUseScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], 'c:' .. ARGV[1]) == 0 then return 0 end
local old = tonumber(redis.call('HGET', KEYS[1], 'n:' .. ARGV[1]) or '0')
local new = tonumber(ARGV[2])
if (new ~= 0 or old ~= 0) and new <= old then return -1 end
redis.call('HSET', KEYS[1], 'n:' .. ARGV[1], ARGV[2], 'u:' .. ARGV[1], ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`)

// TOTP returns the person's TOTP secret and when it was set; nil when
// there is none.
func (s *Store) TOTP(ctx context.Context, team, user string) ([]byte, time.Time, error) {
	if err := person(team, user); err != nil {
		return nil, time.Time{}, err
	}
	v, err := s.rdb.HMGet(ctx, s.passkeysKey(team, user), "totp", "totp_at").Result()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("totp: %w", err)
	}
	enc, _ := v[0].(string)
	if enc == "" {
		return nil, time.Time{}, nil
	}
	secret, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("totp: %w", err)
	}
	at, _ := v[1].(string)
	return secret, fromMS(at), nil
}

// SetTOTP stores the person's TOTP secret, replacing any (and forgetting
// the last step used with it).
func (s *Store) SetTOTP(ctx context.Context, team, user string, secret []byte, at time.Time) error {
	if err := person(team, user); err != nil {
		return err
	}
	key := s.passkeysKey(team, user)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "totp", base64.StdEncoding.EncodeToString(secret), "totp_at", ms(at))
		p.HDel(ctx, key, "totp_step")
		p.PExpire(ctx, key, PasskeyTTL)
		return nil
	})
	if err != nil {
		return fmt.Errorf("set totp: %w", err)
	}
	return nil
}

// RemoveTOTP forgets the person's TOTP secret; false when there was none.
func (s *Store) RemoveTOTP(ctx context.Context, team, user string) (bool, error) {
	if err := person(team, user); err != nil {
		return false, err
	}
	n, err := removeCredentialScript.Run(ctx, s.rdb, []string{s.passkeysKey(team, user)}, ms(s.now()), "totp", "totp_at", "totp_step").Int()
	if err != nil {
		return false, fmt.Errorf("remove totp: %w", err)
	}
	return n > 0, nil
}

// UseTOTPStep records step as the last one used, atomically: false when
// it or a later step was used already.
func (s *Store) UseTOTPStep(ctx context.Context, team, user string, step int64) (bool, error) {
	if err := person(team, user); err != nil {
		return false, err
	}
	n, err := totpStepScript.Run(ctx, s.rdb, []string{s.passkeysKey(team, user)}, step, PasskeyTTL.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("use totp step: %w", err)
	}
	return n == 1, nil
}

// totpStepScript: KEYS: the person's hash. ARGV: step, ttl (ms).
var totpStepScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], 'totp') == 0 then return 0 end
local last = tonumber(redis.call('HGET', KEYS[1], 'totp_step') or '-1')
if tonumber(ARGV[1]) <= last then return 0 end
redis.call('HSET', KEYS[1], 'totp_step', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// TOTPFailures returns the wrong one-time codes counted against scope (a
// link) and against the person in the current window.
func (s *Store) TOTPFailures(ctx context.Context, team, user, scope string) (int, int, error) {
	if err := person(team, user); err != nil {
		return 0, 0, err
	}
	var out [2]int
	for i, k := range []string{s.totpFailKey(scope), s.totpFailKey(team + ":" + user)} {
		n, err := s.rdb.Get(ctx, k).Int()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, 0, fmt.Errorf("totp failures: %w", err)
		}
		out[i] = n
	}
	return out[0], out[1], nil
}

// TOTPFailed counts one wrong code against scope (the count kept for
// scopeTTL) and against the person (kept for window from the window's
// first wrong code: a fixed window, so the limit lifts all at once). Each
// count is one atomic INCR, so racing guesses are all counted; the two
// keys are counted apart (they may live in different cluster slots). It
// returns both counts.
func (s *Store) TOTPFailed(ctx context.Context, team, user, scope string, scopeTTL, window time.Duration) (int, int, error) {
	if err := person(team, user); err != nil {
		return 0, 0, err
	}
	var out [2]int
	for i, c := range []struct {
		key string
		ttl time.Duration
	}{{s.totpFailKey(scope), max(scopeTTL, time.Second)}, {s.totpFailKey(team + ":" + user), window}} {
		n, err := totpFailScript.Run(ctx, s.rdb, []string{c.key}, c.ttl.Milliseconds()).Int()
		if err != nil {
			return 0, 0, fmt.Errorf("totp failed: %w", err)
		}
		out[i] = n
	}
	return out[0], out[1], nil
}

func (s *Store) totpFailKey(what string) string { return s.key("totpfail:" + what) }

// totpFailScript: KEYS: a counter. ARGV: its ttl (ms), set when it
// starts. Returns the count.
var totpFailScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
`)

// SaveRegistration stores a registration link until it expires (by the
// store's clock).
func (s *Store) SaveRegistration(ctx context.Context, l Registration) error {
	if err := person(l.Team, l.User); err != nil {
		return err
	}
	if !validToken(l.ID) {
		return fmt.Errorf("save registration: bad id")
	}
	ttl := l.Expires.Sub(s.now())
	if ttl <= 0 {
		return fmt.Errorf("save registration: it has expired")
	}
	v, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("save registration: %w", err)
	}
	if err := s.rdb.Set(ctx, s.registrationKey(l.ID), v, ttl).Err(); err != nil {
		return fmt.Errorf("save registration: %w", err)
	}
	return nil
}

// RegistrationLink returns the link without consuming it; nil when it is
// unknown, used or expired.
func (s *Store) RegistrationLink(ctx context.Context, id string) (*Registration, error) {
	if !validToken(id) {
		return nil, nil
	}
	return s.registration(s.rdb.Get(ctx, s.registrationKey(id)))
}

// TakeRegistration returns the link and deletes it in one step (GETDEL),
// so that two requests racing with one link cannot both use it; nil when
// it is unknown, used or expired.
func (s *Store) TakeRegistration(ctx context.Context, id string) (*Registration, error) {
	if !validToken(id) {
		return nil, nil
	}
	return s.registration(s.rdb.GetDel(ctx, s.registrationKey(id)))
}

func (s *Store) registration(cmd *redis.StringCmd) (*Registration, error) {
	v, err := cmd.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registration link: %w", err)
	}
	var l Registration
	if err := json.Unmarshal(v, &l); err != nil {
		return nil, fmt.Errorf("registration link: %w", err)
	}
	if !s.now().Before(l.Expires) {
		return nil, nil
	}
	return &l, nil
}

// The audit types of a passkey event.
const (
	AuditPasskeyAdded   AuditType = "passkey_added"
	AuditPasskeyRemoved AuditType = "passkey_removed"
	// AuditTOTPLocked: too many wrong one-time codes for the person in
	// the window; codes are refused until it passes.
	AuditTOTPLocked AuditType = "totp_locked"
)

// AuditPasskey appends a passkey's registration or removal to the audit
// stream: By the person, Decision the method, Detail the team, the
// credential id and its name as JSON.
func (s *Store) AuditPasskey(ctx context.Context, typ AuditType, team, user, method, id, name string, at time.Time) error {
	detail, _ := json.Marshal(struct {
		Team string `json:"team"`
		Cred string `json:"cred"`
		Name string `json:"name"`
	}{team, id, name})
	return s.Audit(ctx, AuditEvent{Type: typ, At: at, By: user, Decision: method, Detail: string(detail)})
}
