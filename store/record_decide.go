package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// Decide records a decision on one call atomically (one round trip). The
// first valid decision wins: an approval counts as one vote, and the call
// is approved when Required distinct approvers have approved the same
// arguments; a denial by anyone denies at once. Repeating a decision (same
// person, same choice) changes nothing and returns the decision already
// made with a nil error. When the last pending call is decided the token
// is resolved, exactly once: its run is queued for resumption and waiters
// in every process are woken. Refusals are written to the audit stream.
//
// Decide returns approval.ErrInvalid for a malformed decision (an unknown
// action, override arguments that are not a JSON object or come without an
// approval, an answer to an approval), approval.ErrNotFound if the token is
// unknown or gone, approval.ErrNotPending if the call is not one of the
// token's, approval.ErrExpired past the deadline, approval.ErrCancelled or
// approval.ErrFailed after the token ended so, approval.ErrDecided (with the
// Decided describing the decision already made) if the call was decided
// differently, approval.ErrResolved if the token was resolved while the call was
// undecided, and approval.ErrTooLate if the decision reached Redis after
// d.NotAfter. With Options.WaitReplicas it returns approval.ErrUnconfirmed
// (with the record as it stands) for a decision held until Redis's
// replicas confirm it (record_stage.go), and approval.ErrRecording while another
// change of the token is held so; neither changed anything yet.
func (s *Store) Decide(ctx context.Context, token string, d approval.Decision) (*approval.Decided, error) {
	if !validToken(token) {
		return nil, fmt.Errorf("decide %s: %w", short(token), approval.ErrNotFound)
	}
	p, err := d.Recorded()
	if err != nil {
		return nil, fmt.Errorf("decide %s %s: %w", short(token), d.CallID, err)
	}
	if d.CardJob != "" && !validCardJob(d.CardJob) {
		return nil, fmt.Errorf("decide %s %s: %w: bad card job name", short(token), d.CallID, approval.ErrInvalid)
	}
	notAfter := ""
	if !d.NotAfter.IsZero() {
		notAfter = strconv.FormatInt(d.NotAfter.UnixMicro(), 10)
	}
	now := s.now()
	w := cardWork{lease: s.cardLeaseKey(token, d.CallID), due: now.Add(CardJobDelay)}
	if d.CardJob != "" {
		w.member, w.holder = cardJobMember(token, d.CallID, d.CardJob), s.cardHolder(d.CardJob)
	}
	args := s.tokenArgs(token, now, d.CallID, d.By, p.Action, p.Key, p.ApprovalResult, p.CallResult, p.Metadata, p.OverrideArgs, d.Reason, p.Answer, notAfter)
	args = append(append(args, s.cardWorkArgs(w)...), d.Grant.Milliseconds())
	method, cred := "", ""
	if d.StepUp != nil && p.StepUp != "" {
		method, cred = d.StepUp.Method, d.StepUp.CredentialID
	}
	args = append(args, p.StepUp, method, p.StepUpAMR, cred)
	keys := append(s.tokenKeys(token), s.jobsRetryKey(), w.lease)
	ident := stageIdent("decide", d.CallID, d.By, p.Action, p.Key)
	res, err := s.runStaged(ctx, OpDecide, token, d.NotAfter, decideScript, keys, ident, w, args)
	if res == nil {
		return nil, fmt.Errorf("decide %s %s: %w", short(token), d.CallID, err)
	}
	out, rerr := s.decideReply(ctx, token, d, p.Key, res)
	if rerr == nil && err != nil {
		// Unconfirmed: held, not recorded yet. If its commit's reply was
		// lost, the commit may have taken the card's lease: free it, so
		// that the card's update need not wait it out.
		if d.CardJob != "" {
			_ = s.ReleaseCard(ctx, token, d.CallID, d.CardJob, "")
		}
		rerr = err
	}
	if rerr != nil {
		return out, fmt.Errorf("decide %s %s: %w", short(token), d.CallID, rerr)
	}
	return out, nil
}

// decideReply reads the reply of the decide script, or of the commit of a
// staged decision, to d, whose vote key is key. A lease the reply says was
// taken is released if the record cannot be read.
func (s *Store) decideReply(ctx context.Context, token string, d approval.Decision, key string, res []string) (*approval.Decided, error) {
	code := res[0]
	var out *approval.Decided
	if len(res) > 2 {
		a, err := s.parseApproval(token, flatMap(res[2:]))
		if err != nil {
			if res[1] == "1" {
				_ = s.ReleaseCard(ctx, token, d.CallID, d.CardJob, "")
			}
			return nil, err
		}
		out = decided(a, code, d, key)
		out.CardLeased = res[1] == "1"
	}
	return out, codeErr(code)
}

// decided describes what the decide script did, from its reply code and
// the record after it; key is the vote key of the decision asked for.
func decided(a *approval.Request, code string, d approval.Decision, key string) *approval.Decided {
	c := a.Call(d.CallID)
	out := &approval.Decided{
		Request:  a,
		Call:     c,
		Changed:  code == "voted" || code == "decided" || code == "resolved",
		Required: c.Required,
		Resolved: code == "resolved",
	}
	switch {
	case c.Status == approval.CallApproved:
		out.Votes = c.VotesFor(c.ApprovedKey)
	case d.Action == approval.ActionApprove:
		// The script may have stored the vote under another key (an
		// edit equal to the call's own arguments): count the stored one.
		for _, v := range c.Votes {
			if v.By == d.By {
				key = v.Key
			}
		}
		out.Votes = c.VotesFor(key)
	}
	return out
}

// decideScript records one decision on one call (decideLua).
// ARGV 7: call id, 8: by, 9: action (approve|deny|answer|fail), 10: key
// (approval.VoteKey of the override args or answer, '-' for none), 11: result if
// the call is an approval, 12: result if it is a question or external
// call, 13: results metadata, 14: override args, 15: message, 16: answer,
// 17: the last instant it may be recorded at, in Unix microseconds by
// Redis's clock (empty for none), 18: the durable card update job to
// schedule with a change (its member of the job retry set; empty for
// none), 19: when it is due (ms), 20: the card lease's holder, 21: the
// lease's ttl (ms), 22: the heartbeat key prefix, 23: the grant's length
// (ms) that comes with it, which only whoever applies a staged decision
// reads, 24: the approval's step-up proof (JSON, empty for none), 25-27:
// its method, AMR (space-separated) and credential id, for the audit
// stream; then the stage mode and identity (stageLua).
// KEYS 8: the job retry set, 9: the card's lease.
// It replies {code} for an error that changed nothing, else {code, leased
// ('1' if it took the card's lease for the holder), record...}; code
// 'staged' when it staged the decision instead of recording it.
var decideScript = redis.NewScript(scriptPrelude + leaseLua + cardWorkLua + stageLua + decideLua + `
return decide(ARGV, stageMode, {jobs = KEYS[8], member = ARGV[18], due = ARGV[19], lease = KEYS[9],
  holder = ARGV[20], ttl = ARGV[21], proc = ARGV[22]})
`)

// decideLua defines decide, which records one decision on one call: A
// holds decideScript's arguments (its ARGV, or the ones staged with the
// decision), L the card work to do with a change (cardWorkLua). Mode
// 'now' records the decision; 'stage' checks it and stages it (stageLua),
// replying 'staged'; 'commit' records the staged decision, checked again
// as it was staged.
const decideLua = `
local function decide(A, mode, L)
  local callID, by, action, key = A[7], A[8], A[9], A[10]
  -- answer replies code, whether the card's lease was taken, and the record.
  local function answer(code, leased)
    local r = redis.call('HGETALL', rec)
    table.insert(r, 1, leased)
    table.insert(r, 1, code)
    return r
  end
  -- changed schedules the durable update of the call's card, if asked, and
  -- takes the card's lease for the caller when it is free, so that the
  -- record of this reply is the state under it (no re-read).
  local function changed(code)
    if cardWork(L) then return answer(code, '1') end
    return answer(code, '0')
  end
  local function refuse(why)
    audit({'type', 'refused', 'call', callID, 'by', by, 'decision', action, 'reason', why})
  end
  -- A decision whose sender stopped waiting for it records nothing, so the
  -- sender can tell the person truthfully that nothing changed. A staged
  -- decision was in time.
  local notAfter = A[17]
  if mode ~= 'commit' and notAfter and notAfter ~= '' then
    local t = redis.call('TIME')
    if tonumber(t[1]) * 1000000 + tonumber(t[2]) > tonumber(notAfter) then
      refuse('too late')
      return {'e:late'}
    end
  end
  if redis.call('EXISTS', rec) == 0 then
    refuse('not found')
    return {'e:notfound'}
  end
  if mode ~= 'commit' then
    local staged = staging()
    if staged == 'staged' then return answer(staged, '0') end
    if staged then return {staged} end
  end
  local i = redis.call('HGET', rec, 'i:' .. callID)
  if not i then
    refuse('not pending')
    return {'e:notpending'}
  end
  local p = 'c' .. i .. '.'
  local f = redis.call('HMGET', rec, 'state', 'exp', p .. 'st', p .. 'kind', p .. 'act', p .. 'by', p .. 'key', p .. 'need', p .. 'tool', p .. 'args', 'run')
  local tstate, exp, st, kind, act, dby, dkey, need, tool, args, run = f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11] or ''

  -- Edited arguments equal to the call's own ("ak", their key) are the
  -- call's own: votes for them count together.
  if action == 'approve' and key ~= '-' and key == redis.call('HGET', rec, p .. 'ak') then
    key = '-'
  end

  -- A repeated click (same person, same decision) changes nothing and
  -- returns the decision already made, whatever happened since.
  if action == 'approve' then
    local v = redis.call('HGET', rec, p .. 'v:' .. by)
    if v and string.match(v, '^%S+') == key and (st == 'pending' or st == 'approved') then
      return answer('same', '0')
    end
  elseif st ~= 'pending' and act == action and dby == by and dkey == key then
    return answer('same', '0')
  end

  if tstate == 'expired' or tstate == 'cancelled' or tstate == 'failed' then
    refuse(tstate)
    return {'e:' .. tstate}
  end
  if st ~= 'pending' and st ~= 'undecided' then
    refuse('already decided')
    return answer('e:decided', '0')
  end
  if tstate ~= 'open' then
    refuse('resolved')
    return {'e:resolved'}
  end
  if tonumber(now) >= tonumber(exp) then
    refuse('expired')
    return {'e:expired'}
  end

  local res
  if kind == 'approval' then
    if action == 'approve' or action == 'deny' then res = A[11] end
  elseif action == 'answer' or action == 'fail' or action == 'deny' then
    res = A[12]
  end
  if not res or res == '' then
    refuse('invalid decision for a ' .. (kind or '?') .. ' call')
    return {'e:invalid'}
  end
  if mode == 'stage' then
    stage('decide')
    return answer('staged', '0')
  end

  -- A step-up proof goes with the approver's vote ("su:<user>"), which
  -- the decided call's StepUp and a quorum's votes are read from; the
  -- audit entry says which method and credential.
  local su = A[24] or ''
  local stepup = {'stepup', A[25] or '', 'amr', A[26] or '', 'cred', A[27] or ''}
  local newst
  if action == 'approve' then
    local vf = p .. 'v:' .. by
    local prev = redis.call('HGET', rec, vf)
    if prev then redis.call('HINCRBY', rec, p .. 'n:' .. string.match(prev, '^%S+'), -1) end
    redis.call('HSET', rec, vf, key .. ' ' .. now)
    if su ~= '' then
      redis.call('HSET', rec, p .. 'su:' .. by, su)
    else
      redis.call('HDEL', rec, p .. 'su:' .. by)
    end
    local cnt = redis.call('HINCRBY', rec, p .. 'n:' .. key, 1)
    if cnt < tonumber(need) then
      audit({'type', 'voted', 'run', run, 'call', callID, 'tool', tool, 'by', by, 'decision', 'approve',
        'args', args or '', 'override', A[14], unpack(stepup)})
      return changed('voted')
    end
    newst = 'approved'
  elseif action == 'deny' then
    if kind == 'approval' then newst = 'denied' else newst = 'failed' end
  elseif action == 'answer' then
    newst = 'answered'
  else
    newst = 'failed'
  end
  redis.call('HSET', rec, p .. 'st', newst, p .. 'by', by, p .. 'at', now, p .. 'res', res,
    p .. 'act', action, p .. 'key', key, p .. 'md', A[13])
  local fields = {'type', 'decided', 'run', run, 'call', callID, 'tool', tool, 'by', by, 'decision', newst,
    'args', args or '', 'override', A[14], 'reason', A[15], 'detail', A[16]}
  if action == 'approve' then
    for j = 1, #stepup do fields[#fields + 1] = stepup[j] end
  end
  audit(fields)
  if redis.call('HINCRBY', rec, 'left', -1) <= 0 then
    finish('resolved', by, '')
    return changed('resolved')
  end
  return changed('decided')
end
`
