package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
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
// replicas confirm it (stage.go), and approval.ErrRecording while another
// change of the token is held so; neither changed anything yet.
func (s *Store) Decide(ctx context.Context, token string, d approval.Decision) (*approval.Decided, error) {
	if !validToken(token) {
		return nil, fmt.Errorf("decide %s: %w", short(token), approval.ErrNotFound)
	}
	p, err := prepare(d)
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
	args := s.tokenArgs(token, now, d.CallID, d.By, p.action, p.key, p.resApproval, p.resCall, p.md, p.override, d.Reason, p.answer, notAfter)
	args = append(append(args, s.cardWorkArgs(w)...), d.Grant.Milliseconds())
	keys := append(s.tokenKeys(token), s.jobsRetryKey(), w.lease)
	ident := stageIdent("decide", d.CallID, d.By, p.action, p.key)
	res, err := s.runStaged(ctx, "decide", token, d.NotAfter, decideScript, keys, ident, w, args)
	if res == nil {
		return nil, fmt.Errorf("decide %s %s: %w", short(token), d.CallID, err)
	}
	out, rerr := s.decideReply(ctx, token, d, p.key, res)
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

// prepared is a Decision in the form the decide script takes.
type prepared struct {
	action      string // approve, deny, answer, fail
	key         string // digest of the arguments or answer, "-" for none
	resApproval string // the result if the call is an approval, "" if not allowed
	resCall     string // the result if it is a question or external call
	md          string
	override    string
	answer      string
}

func prepare(d approval.Decision) (prepared, error) {
	if d.CallID == "" || d.By == "" {
		return prepared{}, fmt.Errorf("%w: a decision needs a call id and who decided", approval.ErrInvalid)
	}
	switch d.Action {
	case approval.ActionApprove, approval.ActionDeny, approval.ActionFail:
	case approval.ActionAnswer:
		if d.Answer == nil {
			return prepared{}, fmt.Errorf("%w: an answer needs a value", approval.ErrInvalid)
		}
	default:
		return prepared{}, fmt.Errorf("%w: unknown action %q: set one of approve, deny, answer, fail", approval.ErrInvalid, d.Action)
	}
	if d.OverrideArgs != nil && d.Action != approval.ActionApprove {
		return prepared{}, fmt.Errorf("%w: override arguments come only with an approval", approval.ErrInvalid)
	}
	if d.Answer != nil && d.Action != approval.ActionAnswer {
		return prepared{}, fmt.Errorf("%w: an answer comes only with the answer action", approval.ErrInvalid)
	}
	p := prepared{key: "-", action: string(d.Action)}
	if d.Metadata != nil {
		b, err := json.Marshal(d.Metadata)
		if err != nil {
			return prepared{}, fmt.Errorf("%w: metadata: %v", approval.ErrInvalid, err)
		}
		p.md = string(b)
	}
	var err error
	switch d.Action {
	case approval.ActionApprove:
		err = p.approve(d.OverrideArgs)
	case approval.ActionDeny:
		err = p.deny(d.Reason)
	case approval.ActionAnswer:
		err = p.answerWith(d.Answer)
	case approval.ActionFail:
		msg := d.Reason
		if msg == "" {
			msg = "The tool call failed."
		}
		p.resCall, err = marshalCall(agentrunner.Fail(msg))
	}
	return p, err
}

// approve prepares an approval, with override arguments when not nil.
func (p *prepared) approve(override json.RawMessage) error {
	r := agentrunner.Approve()
	if override != nil {
		// Decoding the wire form normalizes the arguments exactly as an
		// override arriving over the HTTP API would be.
		wire, err := json.Marshal(map[string]json.RawMessage{"kind": json.RawMessage(`"tool-approved"`), "override_args": override})
		if err != nil {
			return fmt.Errorf("%w: override args: %v", approval.ErrInvalid, err)
		}
		if err := json.Unmarshal(wire, &r); err != nil {
			return fmt.Errorf("%w: %v", approval.ErrInvalid, err)
		}
		if r.OverrideArgs != nil {
			var buf bytes.Buffer
			if err := json.Compact(&buf, r.OverrideArgs); err != nil {
				return fmt.Errorf("%w: override args: %v", approval.ErrInvalid, err)
			}
			r.OverrideArgs = buf.Bytes()
			p.override = buf.String()
			p.key = digest(buf.Bytes())
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	p.resApproval = string(b)
	return nil
}

// deny prepares a denial: of an approval with reason, or, on a question or
// external call, a failure with reason (or the default denial message).
func (p *prepared) deny(reason string) error {
	b, err := json.Marshal(agentrunner.Deny(reason))
	if err != nil {
		return fmt.Errorf("denial: %w", err)
	}
	p.resApproval = string(b)
	if reason == "" {
		reason = agentrunner.DefaultDenialMessage
	}
	p.resCall, err = marshalCall(agentrunner.Fail(reason))
	return err
}

// answerWith prepares the answer to a question or external call.
func (p *prepared) answerWith(answer json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, answer); err != nil {
		return fmt.Errorf("%w: answer is not JSON: %v", approval.ErrInvalid, err)
	}
	var r agentrunner.CallResult
	if err := json.Unmarshal(buf.Bytes(), &r); err != nil {
		return fmt.Errorf("%w: answer: %v", approval.ErrInvalid, err)
	}
	var err error
	if p.resCall, err = marshalCall(r); err != nil {
		return err
	}
	p.answer = buf.String()
	p.key = digest(buf.Bytes())
	return nil
}

func marshalCall(r agentrunner.CallResult) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("call result: %w", err)
	}
	return string(b), nil
}

// argsKey is the vote key that edited arguments equal to the call's own
// would have (the digest of their compact form), so the decide script
// counts such votes with the call's own; ok is false for arguments that
// are not an object.
func argsKey(call agentrunner.ToolCallPart) (string, bool) {
	obj, err := call.ArgsObject()
	if err != nil {
		return "", false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, obj); err != nil {
		return "", false
	}
	return digest(buf.Bytes()), true
}

// digest names a JSON value in a vote or decision key.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// Resolve answers several calls of an open token at once and resolves it,
// as the HTTP API's results endpoint and Tokens.Resolve do. Every
// answer must name a pending call of the right kind (approvals for
// approvals, calls for questions and external calls); calls it leaves out
// end undecided. results.AnsweredBy names who answered each call, by
// otherwise. A token opened but not yet created has no calls to check the
// answers against: they are stored as given.
//
// Resolve returns approval.ErrNotFound if the token is unknown, approval.ErrNotPending
// (naming the offending ids) if an answer names a call that is not
// pending, approval.ErrExpired past the deadline, and approval.ErrResolved, approval.ErrExpired,
// approval.ErrCancelled or approval.ErrFailed if the token already ended. Nothing changes
// on error.
func (s *Store) Resolve(ctx context.Context, token, by string, results *agentrunner.DeferredToolResults) (*approval.Request, error) {
	if !validToken(token) {
		return nil, fmt.Errorf("resolve %s: %w", short(token), approval.ErrNotFound)
	}
	if results == nil {
		results = agentrunner.NewDeferredToolResults()
	}
	raw, err := json.Marshal(results)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", short(token), err)
	}
	answers, n, err := answerArgs(by, results)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", short(token), err)
	}
	args := s.tokenArgs(token, s.now(), by, string(raw), n)
	args = append(args, answers...)
	res, err := resolveScript.Run(ctx, s.rdb, s.tokenKeys(token), withTrace(ctx, args)...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", short(token), err)
	}
	if res[0] == "e:notpending" {
		return nil, fmt.Errorf("resolve %s: %w: %v", short(token), approval.ErrNotPending, res[1:])
	}
	if err := codeErr(res[0]); err != nil {
		return nil, fmt.Errorf("resolve %s: %w", short(token), err)
	}
	a, err := s.parseApproval(token, flatMap(res[1:]))
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", short(token), err)
	}
	return a, nil
}

// answerArgs turns results into the answers of resolveScript and
// answerScript: 6 strings per answer (id, class, result, new state,
// answered by, results metadata), and their number.
func answerArgs(by string, results *agentrunner.DeferredToolResults) ([]any, int, error) {
	var answers []any
	n := 0
	add := func(id, class, res, state string) error {
		md := ""
		if m, ok := results.Metadata[id]; ok {
			b, err := json.Marshal(m)
			if err != nil {
				return fmt.Errorf("metadata of %s: %w", id, err)
			}
			md = string(b)
		}
		who := results.AnsweredBy[id]
		if who == "" {
			who = by
		}
		answers = append(answers, id, class, res, state, who, md)
		n++
		return nil
	}
	for _, id := range slices.Sorted(maps.Keys(results.Approvals)) {
		r := results.Approvals[id]
		b, err := json.Marshal(r)
		if err != nil {
			return nil, 0, fmt.Errorf("approval %s: %w", id, err)
		}
		state := approval.CallDenied
		if r.Approved {
			state = approval.CallApproved
		}
		if err := add(id, "approval", string(b), string(state)); err != nil {
			return nil, 0, err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(results.Calls)) {
		r := results.Calls[id]
		b, err := json.Marshal(r)
		if err != nil {
			return nil, 0, fmt.Errorf("call %s: %w", id, err)
		}
		state := approval.CallAnswered
		if r.Failed || r.Retry {
			state = approval.CallFailed
		}
		if err := add(id, "call", string(b), string(state)); err != nil {
			return nil, 0, err
		}
	}
	return answers, n, nil
}

// Cancel ends an open token: every undecided call gets no decision with
// reason agentrunner.ReasonCancelled, the run is queued for resumption,
// and waiters receive a NoDecisionError whose Cause is ErrTokenCancelled.
// by says who cancelled (for the audit stream). It returns the ended
// record, or approval.ErrNotFound if the token is unknown, or approval.ErrResolved,
// approval.ErrExpired, approval.ErrCancelled or approval.ErrFailed if it already ended.
func (s *Store) Cancel(ctx context.Context, token, by string) (*approval.Request, error) {
	return s.end(ctx, "cancel", token, approval.StateCancelled, by, agentrunner.ReasonCancelled)
}

// Fail ends an open token without a decision, with reason for the model
// (e.g. "asking failed"); waiters receive a NoDecisionError whose Cause is
// ErrTokenFailed. Its errors are those of Cancel.
func (s *Store) Fail(ctx context.Context, token, by, reason string) (*approval.Request, error) {
	if reason == "" {
		reason = "failed"
	}
	return s.end(ctx, "fail", token, approval.StateFailed, by, reason)
}

func (s *Store) end(ctx context.Context, op, token string, state approval.State, by, reason string) (*approval.Request, error) {
	if !validToken(token) {
		return nil, fmt.Errorf("%s %s: %w", op, short(token), approval.ErrNotFound)
	}
	args := s.tokenArgs(token, s.now(), string(state), by, reason)
	ident := stageIdent("end", state, by, reason)
	res, unconfirmed := s.runStaged(ctx, op, token, time.Time{}, endScript, s.tokenKeys(token), ident, cardWork{lease: s.cardLeaseKey(token, "")}, args)
	if res == nil {
		return nil, fmt.Errorf("%s %s: %w", op, short(token), unconfirmed)
	}
	if err := codeErr(res[0]); err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, short(token), err)
	}
	a, err := s.parseApproval(token, flatMap(res[1:]))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, short(token), err)
	}
	if unconfirmed != nil {
		return a, fmt.Errorf("%s %s: %w", op, short(token), unconfirmed)
	}
	return a, nil
}

// sweepBatch is how many due tokens one sweep round claims at most.
const sweepBatch = 256

// Sweep expires every open token whose deadline has passed (by the store's
// clock) and returns their records, so the caller can tell people (e.g.
// update the Slack messages to say "expired"). Each token is claimed by
// exactly one sweeper across all processes and restarts: the claim is the
// atomic removal of the token from the deadline set, in the same script
// that marks it expired, records agentrunner.NoDecision results with
// reason agentrunner.ReasonExpired, queues its run for resumption, queues
// a JobCardUpdate on the JobQueue (so the cards say expired even if this
// process dies now) and wakes its waiters (who get a NoDecisionError with
// Cause ErrTokenExpired).
// Tokens.Run sweeps periodically; call Sweep directly in tests.
func (s *Store) Sweep(ctx context.Context) ([]*approval.Request, error) {
	var out []*approval.Request
	for {
		now := s.now()
		tokens, err := s.rdb.ZRangeByScore(ctx, s.deadlinesKey(), &redis.ZRangeBy{Min: "-inf", Max: ms(now), Count: sweepBatch}).Result()
		if err != nil {
			return out, fmt.Errorf("sweep: %w", err)
		}
		if len(tokens) == 0 {
			return out, nil
		}
		cmds, err := s.pipelined(ctx, expireScript, len(tokens), func(i int) ([]string, []any) {
			keys := append(s.tokenKeys(tokens[i]), s.jobsKey())
			return keys, withTrace(ctx, s.tokenArgs(tokens[i], now, agentrunner.ReasonExpired, string(JobCardUpdate)))
		})
		if err != nil {
			return out, fmt.Errorf("sweep: %w", err)
		}
		for i, cmd := range cmds {
			res, err := cmd.StringSlice()
			if err != nil {
				return out, fmt.Errorf("sweep %s: %w", short(tokens[i]), err)
			}
			if len(res) == 0 {
				continue // another sweeper claimed it, or it ended first
			}
			a, err := s.parseApproval(tokens[i], flatMap(res[1:]))
			if err != nil {
				return out, fmt.Errorf("sweep %s: %w", short(tokens[i]), err)
			}
			out = append(out, a)
		}
		if len(tokens) < sweepBatch {
			return out, nil
		}
	}
}

// pipelined runs script n times in one pipeline, loading it first if the
// server does not know it yet.
func (s *Store) pipelined(ctx context.Context, script *redis.Script, n int, call func(i int) ([]string, []any)) ([]*redis.Cmd, error) {
	run := func() ([]*redis.Cmd, error) {
		cmds := make([]*redis.Cmd, n)
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range n {
				keys, args := call(i)
				cmds[i] = script.EvalSha(ctx, p, keys, args...)
			}
			return nil
		})
		return cmds, err
	}
	cmds, err := run()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err := script.Load(ctx, s.rdb).Err(); err != nil {
			return nil, err
		}
		cmds, err = run()
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	return cmds, nil
}
