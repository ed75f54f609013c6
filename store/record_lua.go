package store

import "github.com/redis/go-redis/v9"

// The Lua scripts make every state change of a token one atomic round trip.
// They run unchanged on Redis 7 and on miniredis (gopher-lua), so they keep
// to Lua 5.1, never decode user JSON (args, answers and results are opaque
// strings in hash fields: cjson would turn [] into {} and round big numbers),
// and do no arithmetic on timestamps beyond comparisons and a TTL.
//
// KEYS of the token scripts: rec, deadlines, resume, audit, callbacks,
// staged (the change staged on the token, stageLua), unconfirmed (the
// tokens with a staged change).
// ARGV 1-6 of the token scripts: token, now (ms), audit maxlen, retention
// (ms), notification channel, grace (ms); script arguments follow, and the
// last ARGV is the W3C traceparent of the caller's span, or empty (withTrace).
//
// The record (hash rec) has the top-level fields
//
//	v state exp opened created run requester team channel thread n left
//	ended endby reason job waiter raw client ctx cb
//
// and, for call number i (1..n, in DeferredToolRequests.IDs order), fields
// prefixed "c<i>.": id tool args ak kind route need rq st by at res act key
// md ch ts, "v:<user>" (a vote: "<key> <ms>") and "n:<key>" (votes per key);
// ak is the key edited arguments equal to the call's own would have.
// "i:<call id>" maps a call id to its number.
const scriptPrelude = `
local rec, deadlines, resume, auditkey, cbkey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local stagedkey, unconfirmedkey = KEYS[6], KEYS[7]
local token, now, maxlen, keep, chan, grace = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local traceparent = ARGV[#ARGV]

-- traced returns the XADD arguments args with the caller's trace context
-- as field tp, when there is one: whoever takes the job continues the
-- trace of the click (or call) that ended the token.
local function traced(args)
  if traceparent ~= '' then
    args[#args + 1] = 'tp'
    args[#args + 1] = traceparent
  end
  return unpack(args)
end

-- capped returns v cut to 8192 bytes (auditValueMax in audit.go) at a
-- UTF-8 boundary, with a marker saying how long it was.
local function capped(v)
  if #v <= 8192 then return v end
  local n = 8192
  while n > 0 do
    local b = string.byte(v, n + 1)
    if b < 128 or b >= 192 then break end
    n = n - 1
  end
  return string.sub(v, 1, n) .. '…[truncated: ' .. #v .. ' bytes]'
end

-- audit appends an event to the audit stream; fields is a flat list of
-- names and values, and empty values are left out. Each value is capped,
-- so the stream (capped by entries) is bounded in bytes too.
local function audit(fields)
  local args = {'XADD', auditkey, 'MAXLEN', '~', maxlen, '*', 'at', now, 'token', token}
  for j = 1, #fields, 2 do
    local v = fields[j + 1]
    if v and v ~= '' then
      args[#args + 1] = fields[j]
      args[#args + 1] = capped(v)
    end
  end
  redis.call(unpack(args))
  redis.call('PEXPIRE', auditkey, keep)
end

-- reply returns code followed by the whole record.
local function reply(code)
  local r = redis.call('HGETALL', rec)
  table.insert(r, 1, code)
  return r
end

-- finish ends the token: undecided calls are marked so, the deadline is
-- dropped, the run (if any) is queued for resumption, a callback (if the
-- record has a callback URL) is queued for delivery, waiters everywhere
-- are notified, and the audit stream says how it ended.
local function finish(state, by, reason)
  local n = tonumber(redis.call('HGET', rec, 'n') or '0')
  for i = 1, n do
    local f = 'c' .. i .. '.st'
    if redis.call('HGET', rec, f) == 'pending' then
      redis.call('HSET', rec, f, 'undecided')
    end
  end
  redis.call('HSET', rec, 'state', state, 'ended', now, 'endby', by, 'reason', reason, 'left', '0')
  redis.call('ZREM', deadlines, token)
  local run = redis.call('HGET', rec, 'run') or ''
  if run ~= '' then
    local id = redis.call(traced({'XADD', resume, '*', 'token', token, 'run', run, 'state', state}))
    redis.call('PEXPIRE', resume, keep)
    redis.call('HSET', rec, 'job', id)
  end
  if cbkey and redis.call('HEXISTS', rec, 'cb') == 1 then
    redis.call(traced({'XADD', cbkey, '*', 'token', token, 'state', state, 'attempt', '1'}))
    redis.call('PEXPIRE', cbkey, keep)
  end
  redis.call('PUBLISH', chan, token)
  audit({'type', state, 'run', run, 'by', by, 'reason', reason})
end

-- settle gives rec a TTL of its deadline plus grace and makes sure the
-- deadline set outlives it.
local function settle(exp)
  redis.call('ZADD', deadlines, exp, token)
  local ttl = tonumber(exp) - tonumber(now) + tonumber(grace)
  if ttl < 1000 then ttl = 1000 end
  redis.call('PEXPIRE', rec, ttl)
  if redis.call('PTTL', deadlines) < ttl then
    redis.call('PEXPIRE', deadlines, ttl)
  end
end
`

// answersLua follows scriptPrelude in the scripts that record many
// answers at once (Answer, Resolve). Their answers are m runs of 6 strings
// from A[first], A their arguments (ARGV, or the ones staged with them):
// id, class (approval|call), result, new state, answered by, results
// metadata.
const answersLua = `
-- pendingAnswers checks that every answer names a distinct pending call
-- of its class. It returns the calls' numbers, indexed by answer from 0,
-- or nil and {'e:notpending', ids of the answers that do not...}.
local function pendingAnswers(A, first, m)
  local bad, seen, nums = {}, {}, {}
  for j = 0, m - 1 do
    local b = first + j * 6
    local i = redis.call('HGET', rec, 'i:' .. A[b])
    local ok = false
    if i and not seen[i] then
      local f = redis.call('HMGET', rec, 'c' .. i .. '.kind', 'c' .. i .. '.st')
      ok = f[2] == 'pending' and ((A[b + 1] == 'approval') == (f[1] == 'approval'))
    end
    if ok then seen[i] = true else bad[#bad + 1] = A[b] end
    nums[j] = i
  end
  if #bad > 0 then
    table.insert(bad, 1, 'e:notpending')
    return nil, bad
  end
  return nums
end

-- recordAnswers records the answers on the calls nums (from
-- pendingAnswers) as made by action act, and audits each for run.
local function recordAnswers(A, first, m, nums, act, run)
  for j = 0, m - 1 do
    local b = first + j * 6
    local p = 'c' .. nums[j] .. '.'
    redis.call('HSET', rec, p .. 'st', A[b + 3], p .. 'by', A[b + 4], p .. 'at', now, p .. 'res', A[b + 2],
      p .. 'act', act, p .. 'key', '-', p .. 'md', A[b + 5])
    local f = redis.call('HMGET', rec, p .. 'tool', p .. 'args')
    audit({'type', 'decided', 'run', run, 'call', A[b], 'tool', f[1] or '', 'by', A[b + 4],
      'decision', A[b + 3], 'args', f[2] or '', 'detail', A[b + 2]})
  end
end
`

// claimLua begins the scripts that claim the resumption of a token's run
// (ClaimResume, a waiter's claim in Tokens.WaitEnded).
const claimLua = `
-- claim claims the resumption of a run for owner in the key claimKey for
-- ttl ms. It succeeds if nobody holds the claim or owner already does, or
-- if the claim is tied to a process heartbeat that is gone. A claim is
-- tied ('@' before the owner) when its owner's process (the owner up to
-- its first '/') has a heartbeat, the key proc .. process, as it is
-- claimed: it dies with the process, so that another takes the run over.
local function claim(claimKey, owner, ttl, proc)
  local cur = redis.call('GET', claimKey)
  if cur then
    local tied = string.sub(cur, 1, 1) == '@'
    local who = cur
    if tied then who = string.sub(cur, 2) end
    if who == owner then return true end
    if not tied then return false end
    if redis.call('EXISTS', proc .. string.match(who, '^[^/]*')) == 1 then return false end
  end
  local v = owner
  if redis.call('EXISTS', proc .. string.match(owner, '^[^/]*')) == 1 then v = '@' .. owner end
  redis.call('SET', claimKey, v, 'PX', ttl)
  return true
end

-- takeOver is the claim of the process that waited on the token of record
-- rec: it drops owner's waiter registration. The run's job stays on the
-- resume stream until the run finished (finishScript): while owner lives
-- the queue leaves it alone, and once owner died another process takes
-- the run over with it.
local function takeOver(rec, owner)
  if redis.call('HGET', rec, 'waiter') == owner then redis.call('HDEL', rec, 'waiter') end
end
`

// createScript writes the full record. It fills in a record a replica of
// an older version announced first (its Tokens.Open wrote a minimal record
// with the deadline and the waiter; none does now), so that records of
// both versions stay readable during a rolling deploy.
// ARGV 7: deadline (ms), empty to keep the announced one, 8: default deadline (ms),
// 9: number of field/value strings that follow, then the fields.
var createScript = redis.NewScript(scriptPrelude + `
local st = redis.call('HGET', rec, 'state')
if st then
  if redis.call('HEXISTS', rec, 'created') == 1 then return {'e:duplicate'} end
  if st ~= 'open' then return {'e:' .. st} end
end
local exp = ARGV[7]
if exp == '' then exp = redis.call('HGET', rec, 'exp') or ARGV[8] end
local args = {'HSET', rec, 'v', '1', 'state', 'open', 'exp', exp}
local nf = tonumber(ARGV[9])
for j = 10, 9 + nf do args[#args + 1] = ARGV[j] end
redis.call(unpack(args))
settle(exp)
local top = redis.call('HMGET', rec, 'n', 'run', 'requester')
for i = 1, tonumber(top[1]) do
  local p = 'c' .. i .. '.'
  local f = redis.call('HMGET', rec, p .. 'id', p .. 'tool', p .. 'args', p .. 'route', p .. 'kind')
  audit({'type', 'requested', 'run', top[2] or '', 'by', top[3] or '', 'call', f[1] or '',
    'tool', f[2] or '', 'args', f[3] or '', 'route', f[4] or '', 'decision', f[5] or ''})
end
return {'ok', exp}
`)

// decideScript records one decision on one call (decideLua).
// ARGV 7: call id, 8: by, 9: action (approve|deny|answer|fail), 10: key
// (digest of the override args or answer, '-' for none), 11: result if
// the call is an approval, 12: result if it is a question or external
// call, 13: results metadata, 14: override args, 15: message, 16: answer,
// 17: the last instant it may be recorded at, in Unix microseconds by
// Redis's clock (empty for none), 18: the durable card update job to
// schedule with a change (its member of the job retry set; empty for
// none), 19: when it is due (ms), 20: the card lease's holder, 21: the
// lease's ttl (ms), 22: the heartbeat key prefix, 23: the grant's length
// (ms) that comes with it, which only whoever applies a staged decision
// reads; then the stage mode and identity (stageLua).
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

  local newst
  if action == 'approve' then
    local vf = p .. 'v:' .. by
    local prev = redis.call('HGET', rec, vf)
    if prev then redis.call('HINCRBY', rec, p .. 'n:' .. string.match(prev, '^%S+'), -1) end
    redis.call('HSET', rec, vf, key .. ' ' .. now)
    local cnt = redis.call('HINCRBY', rec, p .. 'n:' .. key, 1)
    if cnt < tonumber(need) then
      audit({'type', 'voted', 'run', run, 'call', callID, 'tool', tool, 'by', by, 'decision', 'approve',
        'args', args or '', 'override', A[14]})
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
  audit({'type', 'decided', 'run', run, 'call', callID, 'tool', tool, 'by', by, 'decision', newst,
    'args', args or '', 'override', A[14], 'reason', A[15], 'detail', A[16]})
  if redis.call('HINCRBY', rec, 'left', -1) <= 0 then
    finish('resolved', by, '')
    return changed('resolved')
  end
  return changed('decided')
end
`

// resolveScript answers many calls at once and resolves the token.
// ARGV 7: by, 8: the results' JSON (kept only for a record that has no
// calls yet), 9: number of answers, then 6 strings per answer: id, class
// (approval|call), result, new state, answered by, results metadata.
// It is never staged, and waits for a staged change (stageLua).
var resolveScript = redis.NewScript(scriptPrelude + answersLua + `
if redis.call('EXISTS', rec) == 0 then return {'e:notfound'} end
if redis.call('EXISTS', stagedkey) == 1 then return {'e:recording'} end
local top = redis.call('HMGET', rec, 'state', 'exp', 'n', 'created', 'run')
if top[1] ~= 'open' then return {'e:' .. top[1]} end
if tonumber(now) >= tonumber(top[2]) then return {'e:expired'} end
local by, m = ARGV[7], tonumber(ARGV[9])
if not top[4] then
  redis.call('HSET', rec, 'raw', ARGV[8])
  finish('resolved', by, '')
  return reply('resolved')
end
local nums, bad = pendingAnswers(ARGV, 10, m)
if not nums then return bad end
recordAnswers(ARGV, 10, m, nums, 'resolve', top[5] or '')
finish('resolved', by, '')
return reply('resolved')
`)

// endScript cancels or fails an open token (endLua).
// ARGV 7: state (cancelled|failed), 8: by, 9: reason, then the stage mode
// and identity (stageLua).
var endScript = redis.NewScript(scriptPrelude + leaseLua + cardWorkLua + stageLua + endLua + `
return endToken(ARGV, stageMode, noCardWork)
`)

// endLua defines endToken, which ends an open token as A (endScript's
// arguments, or the ones staged with them) says, doing the card work L
// with it; its modes are decide's (decideLua).
const endLua = `
local function endToken(A, mode, L)
  local st = redis.call('HGET', rec, 'state')
  if not st then return {'e:notfound'} end
  if st ~= 'open' then return {'e:' .. st} end
  if mode ~= 'commit' then
    local staged = staging()
    if staged == 'staged' then return reply(staged) end
    if staged then return {staged} end
  end
  if mode == 'stage' then
    stage('end')
    return reply('staged')
  end
  cardWork(L)
  finish(A[7], A[8], A[9])
  return reply('ok')
end
`

// expireScript expires a token whose deadline has passed. Removing the
// token from the deadline set is the claim: of all the sweepers racing on
// the token, only the one that removes it acts, and in the same step it
// queues the job that updates the token's cards (see JobQueue), so the
// cards are updated even if the sweeper dies at once. A change staged on
// the token and still unconfirmed at its deadline is void: dropped.
// KEYS 8: the job stream. ARGV 7: reason, 8: the card update job's kind.
var expireScript = redis.NewScript(scriptPrelude + stageLua + `
local score = redis.call('ZSCORE', deadlines, token)
if not score or tonumber(score) > tonumber(now) then return {} end
redis.call('ZREM', deadlines, token)
if redis.call('HGET', rec, 'state') ~= 'open' then return {} end
if redis.call('EXISTS', stagedkey) == 1 then unstage() end
finish('expired', '', ARGV[7])
redis.call('XADD', KEYS[8], '*', 'kind', ARGV[8], 'token', token, 'data', '', 'attempt', '1')
redis.call('PEXPIRE', KEYS[8], keep)
return reply('expired')
`)

// messageScript records the Slack message of a call.
// KEYS: rec. ARGV: call id, channel, ts.
var messageScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 'e:notfound' end
local i = redis.call('HGET', KEYS[1], 'i:' .. ARGV[1])
if not i then return 'e:notpending' end
redis.call('HSET', KEYS[1], 'c' .. i .. '.ch', ARGV[2], 'c' .. i .. '.ts', ARGV[3])
return 'ok'
`)

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

// claimScript claims the resumption of a token's run for owner: it
// succeeds if nobody holds the claim, owner already does, or the holder's
// process died (claimLua). With local set, the claimer is the process that
// waited on the token: it also drops its waiter registration.
// KEYS: claim, rec, resume. ARGV: owner, ttl (ms), group, local ('1'|'0'),
// heartbeat key prefix.
var claimScript = redis.NewScript(claimLua + `
if not claim(KEYS[1], ARGV[1], ARGV[2], ARGV[5]) then return 0 end
if ARGV[4] == '1' then takeOver(KEYS[2], ARGV[1]) end
return 1
`)

// releaseScript drops owner's claim, tied or not.
// KEYS: claim. ARGV: owner.
var releaseScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] or cur == '@' .. ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// finishScript takes the resume job of a token whose run finished off
// the resume stream: nobody is to resume the run again.
// KEYS: rec, resume. ARGV: group.
var finishScript = redis.NewScript(`
local job = redis.call('HGET', KEYS[1], 'job')
if job then
  redis.pcall('XACK', KEYS[2], ARGV[1], job)
  redis.call('XDEL', KEYS[2], job)
end
return 1
`)

// groupScript creates the resume consumer group (reading from the start
// of the stream, so jobs queued before the group existed are not lost)
// and gives the stream a TTL.
// KEYS: resume. ARGV: group, retention (ms).
var groupScript = redis.NewScript(`
redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], '0', 'MKSTREAM')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)
