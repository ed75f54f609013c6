package store

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
// md ch ts, "v:<user>" (a vote: "<key> <ms>"), "su:<user>" (the step-up
// proof that came with the vote, JSON) and "n:<key>" (votes per key);
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
// answers at once (Answer). Their answers are m runs of 6 strings
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
