package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// This file holds the staging of the changes people and clients are
// answered on (a decision, an API answer, a cancellation, a failure) under
// Options.WaitReplicas. Such a change is first written as staged: checked
// as it would be applied, kept with its arguments, and with no effect at
// all (the request still reads as before, nothing wakes, nothing is
// queued). WAIT follows it on the same connection. Only once the replicas
// confirmed the staging is the change applied (commitScript): recorded,
// and its run, waiters, callback and card set off. A staging the replicas
// did not confirm in time is applied later by whoever repeats the same
// change or by the confirmer (Confirm), once they do; a failover to a
// replica that never had it loses it, and the request is as it was before;
// at the request's deadline it is void (expireScript drops it). While a
// change is staged every other change of the token waits for it
// (ERECORDING). Without WaitReplicas a change is applied at once, as the
// same scripts' mode 'now'.

// Stage modes: the argument that tells a stageable script to apply its
// change at once or to stage it.
const (
	stageNow   = "now"
	stageStage = "stage"
)

// stageLua follows scriptPrelude in the scripts that may stage their
// change (decideScript, answerScript, endScript), in commitScript and in
// expireScript. Such a script's last ARGV but the traceparent are its
// mode ('now' or 'stage') and its change's identity (stageIdent: the same
// change repeated has the same). The staged change is the list stagedkey:
// kind (decide|answer|end), identity, when it was staged (ms), then the
// script's ARGV from 7 on.
const stageLua = `
local stageMode, stageIdent = ARGV[#ARGV - 2], ARGV[#ARGV - 1]

local function stagedTTL()
  local ttl = redis.call('PTTL', rec)
  if ttl < 1000 then ttl = tonumber(keep) end
  return ttl
end

-- staging says what becomes of this script's change while another is
-- staged on the token: nil when none is; 'staged' when the staged one is
-- this same change, repeated (its staging is touched: a write, so that
-- the WAIT after this script covers the staging); else 'e:recording'.
local function staging()
  local id = redis.call('LINDEX', stagedkey, 1)
  if not id then return nil end
  if id ~= stageIdent then return 'e:recording' end
  redis.call('PEXPIRE', stagedkey, stagedTTL())
  return 'staged'
end

-- stage stages this script's change, of kind, instead of applying it, and
-- lists the token among those with an unconfirmed change.
local function stage(kind)
  local args = {'RPUSH', stagedkey, kind, stageIdent, now}
  for j = 7, #ARGV do args[#args + 1] = ARGV[j] end
  redis.call('DEL', stagedkey)
  redis.call(unpack(args))
  redis.call('PEXPIRE', stagedkey, stagedTTL())
  redis.call('ZADD', unconfirmedkey, now, token)
  if redis.call('PTTL', unconfirmedkey) < tonumber(keep) then redis.call('PEXPIRE', unconfirmedkey, keep) end
end

-- unstage forgets the token's staged change: applied, or void.
local function unstage()
  redis.call('DEL', stagedkey)
  redis.call('ZREM', unconfirmedkey, token)
end
`

// cardWorkLua follows leaseLua. The card work of a change is a table L:
// the durable card update job to schedule (member of the job retry set
// jobs, due at due; none if member is empty) and the card lease to take
// with it (the key lease, for holder, ttl ms, heartbeat key prefix proc;
// none if holder is empty).
const cardWorkLua = `
local noCardWork = {member = ''}

-- cardWork does the card work L and reports whether it took the lease.
local function cardWork(L)
  if L.member == '' then return false end
  redis.call('ZADD', L.jobs, L.due, L.member)
  -- Only ever lengthen the schedule's TTL: it holds work due later too.
  if redis.call('PTTL', L.jobs) < tonumber(keep) then redis.call('PEXPIRE', L.jobs, keep) end
  return L.holder ~= '' and takeLease(L.lease, L.holder, L.ttl, L.proc)
end
`

// commitScript applies the change staged on a token once Redis's
// replicas confirmed its staging, as its own script would have applied
// it: checked again (nothing else changes a token while a change is
// staged, and expiry drops it), as at the instant it was staged, in its
// trace. It replies {'none'} when no change of the expected identity is
// staged (applied already, or dropped), else what the change's script
// would have replied.
// KEYS 8: the job retry set, 9: the card's lease. ARGV 7: the identity
// expected, 8-12: the card work (cardWorkLua: member, due, holder, ttl,
// proc).
var commitScript = redis.NewScript(scriptPrelude + leaseLua + cardWorkLua + stageLua + answersLua + decideLua + answerLua + endLua + `
local all = redis.call('LRANGE', stagedkey, 0, -1)
if #all < 3 or all[2] ~= ARGV[7] then return {'none'} end
local A = {}
for j = 1, 6 do A[j] = ARGV[j] end
for j = 4, #all do A[j + 3] = all[j] end
now, traceparent = all[3], A[#A]
local L = {jobs = KEYS[8], member = ARGV[8], due = ARGV[9], lease = KEYS[9], holder = ARGV[10], ttl = ARGV[11], proc = ARGV[12]}
local r
if all[1] == 'decide' then
  r = decide(A, 'commit', L)
elseif all[1] == 'answer' then
  r = answerCalls(A, 'commit', L)
else
  r = endToken(A, 'commit', L)
end
unstage()
return r
`)

// confirmScript reads the changes staged on some tokens and, in the same
// step, writes: the WAIT that follows it on its connection then confirms
// every staging it read. It replies the staged changes, one list each
// (empty: applied or dropped since, or gone with its record, and then
// taken out of the set), or nothing if no change is staged.
// KEYS 1: the set of tokens with a staged change, then the staged change
// of each token to confirm. ARGV 1: retention (ms), then the tokens.
var confirmScript = redis.NewScript(`
if redis.call('PEXPIRE', KEYS[1], ARGV[1]) == 0 then return {} end
local out = {}
for i = 2, #KEYS do
  local l = redis.call('LRANGE', KEYS[i], 0, -1)
  if #l == 0 then redis.call('ZREM', KEYS[1], ARGV[i]) end
  out[#out + 1] = l
end
return out
`)

// Keys of staging: the change staged on a token, and the tokens with one.
func (s *Store) stagedKey(token string) string { return s.key("a:" + token + ":staged") }
func (s *Store) unconfirmedKey() string        { return s.key("unconfirmed") }

// stageIdent names a change for its staging: kind and the parts that make
// it the same change when repeated (who, which call, which decision).
func stageIdent(kind string, parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprint(h, p)
		h.Write([]byte{0})
	}
	return kind + ":" + hex.EncodeToString(h.Sum(nil)[:12])
}

// cardWork is the card work to do with an applied change (cardWorkLua).
type cardWork struct {
	lease  string    // the card's lease key
	member string    // the card update job's member of the job retry set; "" for none
	due    time.Time // when the job is due
	holder string    // who takes the lease; "" for nobody
}

func (s *Store) cardWorkArgs(w cardWork) []any {
	return []any{w.member, ms(w.due), w.holder, cardLeaseTTL.Milliseconds(), s.procKey("")}
}

// runStaged runs script, a stageable change of token for op (stageLua),
// with its arguments args (without the mode, the identity and the
// traceparent, which it adds). Without WaitReplicas it applies the change
// at once. With it, the change is staged and WAIT follows; once the
// replicas confirmed it, it is applied (commitScript, with the card work
// w) and the reply is the applied change's. If they did not confirm it in
// time, the reply is the staging's ('staged', with the record as it
// stands) and the error wraps approval.ErrUnconfirmed.
func (s *Store) runStaged(ctx context.Context, op, token string, notAfter time.Time, script *redis.Script, keys []string, ident string, w cardWork, args []any) ([]string, error) {
	mode := stageStage
	if s.opts.WaitReplicas <= 0 {
		// Applied at once; only the repeat of a change staged before
		// (while WaitReplicas was set) replies 'staged', and is applied
		// below.
		mode = stageNow
	}
	args = withTrace(ctx, append(args, mode, ident))
	var res []string
	// A second round only when the staging vanished between its WAIT and
	// its commit (another process applied it, or the deadline voided it):
	// it tells which.
	for range 2 {
		cmd, notYet := s.runWaited(ctx, notAfter, script, keys, args...)
		var err error
		if res, err = cmd.StringSlice(); err != nil || res[0] != "staged" {
			return res, err
		}
		if notYet != nil {
			return res, s.unconfirmed(op, notYet)
		}
		applied, err := s.commit(ctx, token, ident, w)
		if err != nil {
			// Confirmed but not applied: the confirmer applies it.
			return res, s.unconfirmed(op, fmt.Errorf("confirmed, not applied yet: %w", err))
		}
		if applied[0] != "none" {
			return applied, nil
		}
	}
	return res, s.unconfirmed(op, errors.New("the staged change vanished twice"))
}

// commit applies the change of identity ident staged on token, with the
// card work w (commitScript).
func (s *Store) commit(ctx context.Context, token, ident string, w cardWork) ([]string, error) {
	keys := append(s.tokenKeys(token), s.jobsRetryKey(), w.lease)
	args := append(s.tokenArgs(token, s.now(), ident), s.cardWorkArgs(w)...)
	return commitScript.Run(ctx, s.rdb, keys, withTrace(ctx, args)...).StringSlice()
}

// confirmBatch is how many staged changes one Confirm takes at most.
const confirmBatch = 100

// Confirm implements approval.Confirmer: it asks Redis's replicas, with
// one WAIT, to confirm the changes staged while they did not answer, and
// applies each one they confirmed, as its writer would have once it was
// confirmed: a decision schedules its card's update (under a new job name,
// Decision.CardJob, whose lease it takes) and a change of the whole
// request schedules the update of every card (Decision.CardJob, with no
// CallID). It returns the changes it applied; none while the replicas
// still do not confirm. A change that could no longer be applied (its
// request ended meanwhile) is dropped and reported in the error.
func (s *Store) Confirm(ctx context.Context) ([]approval.Confirmed, error) {
	tokens, err := s.rdb.ZRange(ctx, s.unconfirmedKey(), 0, confirmBatch-1).Result()
	if err != nil || len(tokens) == 0 {
		return nil, wrapErr("confirm", err)
	}
	keys, args := []string{s.unconfirmedKey()}, []any{s.opts.Retention.Milliseconds()}
	for _, t := range tokens {
		keys, args = append(keys, s.stagedKey(t)), append(args, t)
	}
	cmd, notYet := s.runWaited(ctx, time.Time{}, confirmScript, keys, args...)
	staged, err := cmd.Slice()
	if err != nil || notYet != nil {
		return nil, wrapErr("confirm", err) // not confirmed yet: the next round asks again
	}
	var out []approval.Confirmed
	var errs []error
	for i, v := range staged {
		c, err := s.commitStaged(ctx, tokens[i], v)
		if err != nil {
			errs = append(errs, fmt.Errorf("confirm %s: %w", short(tokens[i]), err))
		}
		if c != nil {
			out = append(out, *c)
		}
	}
	return out, errors.Join(errs...)
}

func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", op, err)
}

// commitStaged applies staged, the change staged on token as
// confirmScript read it, if it is still staged.
func (s *Store) commitStaged(ctx context.Context, token string, staged any) (*approval.Confirmed, error) {
	l, _ := staged.([]any)
	if len(l) < 3 {
		return nil, nil // applied or dropped since
	}
	// arg is the staged change's script argument ARGV[i], from 7 on.
	arg := func(i int) string {
		if i-4 >= len(l) {
			return ""
		}
		v, _ := l[i-4].(string)
		return v
	}
	kind, ident := arg(4), arg(5)
	job := agentrunner.NewToken()
	d := approval.Decision{CardJob: job}
	w := cardWork{lease: s.cardLeaseKey(token, ""), member: cardJobMember(token, "", job), due: s.now().Add(CardJobDelay)}
	if kind == "decide" {
		grant, _ := strconv.ParseInt(arg(23), 10, 64)
		d = approval.Decision{CallID: arg(7), By: arg(8), Action: approval.Action(arg(9)), Grant: time.Duration(grant) * time.Millisecond, CardJob: job}
		w = cardWork{lease: s.cardLeaseKey(token, d.CallID), member: cardJobMember(token, d.CallID, job), due: w.due, holder: s.cardHolder(job)}
	}
	res, err := s.commit(ctx, token, ident, w)
	if err != nil {
		return nil, err
	}
	if res[0] == "none" {
		return nil, nil
	}
	if kind == "decide" {
		out, err := s.decideReply(ctx, token, d, arg(10), res)
		if err != nil {
			return nil, err
		}
		return &approval.Confirmed{Decision: d, Decided: out}, nil
	}
	if err := codeErr(res[0]); err != nil {
		return nil, err
	}
	a, err := s.parseApproval(token, flatMap(res[1:]))
	if err != nil {
		return nil, err
	}
	return &approval.Confirmed{Decision: d, Decided: &approval.Decided{Request: a, Changed: true, Resolved: a.State == approval.StateResolved}}, nil
}
