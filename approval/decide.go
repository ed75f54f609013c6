package approval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/slackapprove/slackbot/agentrunner"
)

// Decider is who decides, as the door they came through vouches for them.
// Exactly one of User and Client is set.
type Decider struct {
	// User is the Slack user who clicked a button or submitted a form.
	User string
	// Team, when the door knows it, is User's Slack workspace: a step-up
	// link is bound to it (BeginStepUp); empty means the request's.
	Team string
	// Message is the message the click came from: it must be the call's
	// card, unless Home is set.
	Message MessageRef
	// Home: the click came from User's own list of what waits for them
	// (Slack's App Home), which lists the calls they may decide; such a
	// click has no card.
	Home bool
	// Client is the authenticated API client (an API key) answering for
	// its own request. It answers the request's calls (external results,
	// answers to questions), but approves or denies its approvals only on
	// a route with allow_self_approval: the key an agent holds must never
	// stand in for the person the route names. Where it may, its answer is
	// authoritative: an approval meets a quorum at once.
	Client string
}

// Decide is the one way a decision is made, whatever door it came through:
// a button, a form, an answer of the HTTP API. It loads the request once,
// authorizes by for every decision (a refusal is audited and counted),
// checks edited arguments as every edit is checked (CheckEdit), records the
// decisions atomically, and then, after returning, brings the cards of the
// calls it changed up to date. The decision that decides the last pending
// call resolves the request, and the store wakes its run.
//
// A person decides one call at a time: their approval is one vote toward
// the call's quorum. An API client may answer several calls at once, but
// decides its own approvals only where their route sets
// allow_self_approval (ESELFAPPROVAL otherwise, for the whole answer).
//
// Errors are *Error: ENOTFOUND (unknown token or call, or another client's
// request), the request's end (EEXPIRED, ECANCELLED, ERESOLVED, EFAILED),
// EDECIDED (with the Decided describing the decision already made),
// ETOOLATE, a refusal (ENOTAPPROVER, ESELFAPPROVAL, EWRONGMESSAGE,
// ENOROUTE), EINVALID or EPOLICY for edited arguments, ECONFLICT for API
// answers to calls already decided, EUNAVAILABLE when the directory could
// not say who is in a route's usergroups (no refusal: nothing is audited);
// other errors when the store cannot be reached.
func (s *Service) Decide(ctx context.Context, token string, by Decider, ds ...Decision) (*Decided, error) {
	if len(ds) == 0 || (by.User == "") == (by.Client == "") || (by.User != "" && len(ds) > 1) {
		return nil, Errorf(EINVALID, "decide: a person makes one decision, an API client one or more")
	}
	r, err := s.store.Get(ctx, token)
	if err != nil {
		return nil, err
	}
	return s.DecideOn(ctx, r, by, ds...)
}

// DecideOn is Decide on a request the caller loaded already (a click loads
// it to find the call its button names and to check the workspace): it
// saves the second read. The store's script still decides on the current
// state, atomically; r only serves the checks before it.
func (s *Service) DecideOn(ctx context.Context, r *Request, by Decider, ds ...Decision) (*Decided, error) {
	if len(ds) == 0 || (by.User == "") == (by.Client == "") || (by.User != "" && len(ds) > 1) {
		return nil, Errorf(EINVALID, "decide: a person makes one decision, an API client one or more")
	}
	if by.Client != "" {
		return s.answer(ctx, r, by, ds)
	}
	if ds[0].StepUp != nil {
		return nil, errForeignProof
	}
	return s.decideOne(ctx, r, by, ds[0], true)
}

// decideOne is a person's decision d on one call of r. others: the cards
// of the request's other pending approvals are brought up to date too
// when this decision changes how many are pending (their "Approve all N");
// DecideAll, which decides them in turn, updates them once at its end.
func (s *Service) decideOne(ctx context.Context, r *Request, by Decider, d Decision, others bool) (*Decided, error) {
	token := r.Token
	c := r.Call(d.CallID)
	if c == nil {
		return nil, fmt.Errorf("decide %s: %w", d.CallID, ErrNotFound)
	}
	if len(d.OverrideArgs) > 0 && !s.editable(r, c) {
		return nil, Errorf(EINVALID, "slackbot does not know this tool's arguments, so they cannot be edited here.")
	}
	if d.Grant != 0 {
		if err := s.checkGrant(r, c, d); err != nil {
			return nil, err
		}
	}
	if d.AlwaysAllow {
		if err := s.checkAlwaysAllow(r, c, d); err != nil {
			return nil, err
		}
	}
	d.Metadata = withOfferedRule(r, c, d)
	if err := s.Authorize(ctx, r, c, by, d.Action); err != nil {
		return nil, err
	}
	if d.Grant > 0 || d.AlwaysAllow {
		// Both approve later calls, which never escalated.
		if err := s.checkGrantor(ctx, r, c, by); err != nil {
			return nil, err
		}
	}
	if d.Action == ActionApprove && len(d.OverrideArgs) > 0 {
		var err error
		if d.OverrideArgs, err = s.CheckEdit(ctx, r, c, d.OverrideArgs); err != nil {
			return nil, err
		}
	}
	// After the authorization, so that only someone who may approve is
	// asked for a step-up, and on the arguments that would run.
	if err := s.checkStepUp(ctx, r, c, d); err != nil {
		return nil, err
	}
	if d.Action != ActionApprove {
		d.StepUp = nil
	}
	// The card's update is scheduled durably with the decision, and its
	// lease taken, in the same step (see updateCard).
	d.CardJob = agentrunner.NewToken()
	res, err := s.store.Decide(ctx, token, d)
	if ErrorCode(err) == EINTERNAL {
		// The reply was lost (a timeout at the acknowledgement budget): the
		// script may have taken the card's lease. Free it, so that whoever
		// updates the card next need not wait out the lease; the scheduled
		// job, if any, stays.
		s.later(ctx, "release a card lease", func(ctx context.Context) error {
			return s.store.ReleaseCard(ctx, token, d.CallID, d.CardJob, "")
		})
	}
	if err != nil {
		return res, err
	}
	s.afterDecide(ctx, r, c, by, d, res)
	if others && res.Changed && res.Call != nil && res.Call.Status != CallPending {
		s.updateOtherCards(ctx, res.Request, c.ID)
	}
	return res, nil
}

// afterDecide does what follows decision d by by on call c of r, as the
// store recorded it (res): the run resumes if it resolved r, a grant it
// made is saved, a decision on an escalated call is noted, and the card
// is brought up to date after the caller's answer.
func (s *Service) afterDecide(ctx context.Context, r *Request, c *Call, by Decider, d Decision, res *Decided) {
	if res.Resolved {
		s.resumeRun(ctx, r)
	}
	if !res.Changed {
		return
	}
	if d.Grant > 0 && res.Call.Status == CallApproved {
		s.grant(ctx, r, c, d)
	}
	if d.AlwaysAllow && res.Call.Status == CallApproved {
		s.alwaysAllowed(ctx, r, c, d)
	}
	s.noteEscalation(ctx, r, c, by, d.Action)
	s.countDecision(cmp.Or(res.Request, r), res.Call)
	if d.CardJob == "" {
		return // decided before any card showed it (decideBySystem)
	}
	var held *Request
	if res.CardLeased {
		held = res.Request
	}
	token := r.Token
	s.later(ctx, "update card", func(ctx context.Context) error {
		return s.updateCard(ctx, token, res.Call.ID, d.CardJob, d.CardJob, held)
	})
}

// Authorize reports whether by may decide call c of r with action, and
// records a refusal in the audit stream. It is Decide's check, for the doors
// that ask before they let a person decide (opening a form).
func (s *Service) Authorize(ctx context.Context, r *Request, c *Call, by Decider, action Action) error {
	err := s.authorize(ctx, r, c, by, action)
	var refused *Error
	if err == nil || !errors.As(err, &refused) || refused.Code == EUNAVAILABLE {
		return err
	}
	s.Refuse(ctx, r, c, by, refused)
	return err
}

// Refuse counts a refused attempt to decide call c of r by its code and
// records it in the audit stream. Authorize calls it for its refusals; a
// door calls it for the refusals it makes itself before the Service is
// asked (bot: a click from another Slack workspace).
func (s *Service) Refuse(ctx context.Context, r *Request, c *Call, by Decider, refused *Error) {
	s.metrics.Refused(refused.Code)
	who := by.User + by.Client
	if aerr := s.store.Refused(ctx, r.Token, c.ID, who, refused.Code, refused.Message); aerr != nil {
		s.log.ErrorContext(ctx, "audit a refused decision", "err", aerr, "code", refused.Code)
	}
	s.log.InfoContext(ctx, "decision refused", "by", who, "route", c.Route, "code", refused.Code)
}

func (s *Service) authorize(ctx context.Context, r *Request, c *Call, by Decider, action Action) error {
	if by.Client != "" {
		if r.Origin.Client != by.Client {
			return fmt.Errorf("decide: %w", ErrNotFound) // another client's request is none of its business
		}
		// Only its own request reaches here: answering its calls is the
		// client's job, deciding its approvals is a person's, unless the
		// route lets the requester decide.
		if c == nil || c.Kind != agentrunner.KindApproval {
			return nil
		}
		if route := s.Route(c.Route); route == nil || !route.AllowSelfApproval {
			return Errorf(ESELFAPPROVAL, "The API key %q asked for call %s, so it may not approve or deny it: a person decides it in Slack (its route does not set allow_self_approval).", by.Client, c.ID)
		}
		return nil
	}
	if c.Message.Channel != "" && !by.Home && by.Message != c.Message {
		return Errorf(EWRONGMESSAGE, "This button does not belong to the message of this request.")
	}
	route := s.Route(c.Route)
	if route == nil {
		return Errorf(ENOROUTE, "The route %q that this request was sent through no longer exists, so nobody can decide it here.", c.Route)
	}
	ok, err := route.IsApprover(ctx, by.User, s.dir.Members)
	if err == nil && !ok && s.Escalated(r, c) {
		ok, err = route.IsEscalationApprover(ctx, by.User, s.dir.Members)
	}
	if err != nil {
		// Not a refusal: who may decide could not be learnt.
		return approversUnavailable("authorize "+by.User, err)
	}
	if !ok {
		return Errorf(ENOTAPPROVER, "You are not an approver for %s requests.", route.Name)
	}
	if action != ActionDeny && by.User == r.Origin.User && !route.AllowSelfApproval {
		return Errorf(ESELFAPPROVAL, "You asked for this call, so someone else must approve it.")
	}
	return nil
}

// answer records an API client's answers to calls of its own request, at
// once: approvals only where their route allows self-approval
// (authorizeAnswers), every answer must name a pending call under its
// kind, edits are checked, and who answered is the client (a name it
// gives is kept after it, so that the audit stream never shows an
// unverified name alone).
func (s *Service) answer(ctx context.Context, r *Request, by Decider, ds []Decision) (*Decided, error) {
	if err := s.authorize(ctx, r, nil, by, ""); err != nil {
		return nil, err
	}
	if err := r.EndErr(); err != nil {
		return nil, err
	}
	if err := s.authorizeAnswers(ctx, r, by, ds); err != nil {
		return nil, err
	}
	if err := s.clientStepUp(ctx, r, ds); err != nil {
		return nil, err
	}
	results, err := s.results(ctx, r, by.Client, ds)
	if err != nil {
		return nil, err
	}
	var after *Request
	if err := s.changeCards(ctx, r.Token, func() (err error) {
		after, err = s.store.Answer(ctx, r.Token, by.Client, results)
		return err
	}); err != nil {
		return nil, err
	}
	if after.State == StateResolved {
		s.resumeRun(ctx, r)
	}
	for _, d := range ds {
		if c := after.Call(d.CallID); c != nil {
			s.countDecision(after, c)
		}
	}
	return &Decided{Request: after, Changed: true, Resolved: after.State == StateResolved}, nil
}

// authorizeAnswers refuses an API client's whole answer, before anything
// is recorded, when one of its decisions approves or denies a pending
// approval the client may not decide (Authorize: each such call's refusal
// is counted and audited, naming the client). Answers to calls that are
// not pending approvals are left to results, which says what is wrong
// with them.
func (s *Service) authorizeAnswers(ctx context.Context, r *Request, by Decider, ds []Decision) error {
	var refused []string
	for _, d := range ds {
		c := r.Call(d.CallID)
		if c == nil || c.Status != CallPending || !kindFits(c.Kind, d.Action) {
			continue
		}
		if err := s.Authorize(ctx, r, c, by, d.Action); err != nil {
			if ErrorCode(err) != ESELFAPPROVAL {
				return err
			}
			refused = append(refused, c.ID)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	slices.Sort(refused)
	return Errorf(ESELFAPPROVAL, "The API key %q may not approve or deny the calls it asked for (%s): a person decides them in Slack, as their route does not set allow_self_approval. Nothing was recorded.",
		by.Client, strings.Join(refused, ", "))
}

// clientStepUp refuses an API client's whole answer (ESTEPUP, nothing
// recorded) when it approves a pending call whose approval needs a
// step-up: a key an agent's process holds proves no person at all, so it
// never approves such a call, even where the route allows self-approval.
func (s *Service) clientStepUp(ctx context.Context, r *Request, ds []Decision) error {
	for _, d := range ds {
		c := r.Call(d.CallID)
		if d.Action != ActionApprove || c == nil || c.Status != CallPending || c.Kind != agentrunner.KindApproval {
			continue
		}
		if _, need := s.needsStepUp(ctx, c, stepUpArgs(r, c, d.OverrideArgs)); need {
			return Errorf(ESTEPUP, "call %s needs a person's step-up (a passkey) to be approved: an API key cannot approve it. Nothing was recorded.", c.ID)
		}
	}
	return nil
}

// results turns an API client's decisions into the results to record,
// refusing the whole answer (nothing recorded) at the first kind of
// problem, in this order: answers that name no call of the request under
// its kind (every one named, sorted), answers to calls already decided
// (ECONFLICT, every one named), then edited arguments (CheckEdit), checked
// in the order of the decisions.
func (s *Service) results(ctx context.Context, r *Request, client string, ds []Decision) (*agentrunner.DeferredToolResults, error) {
	var bad, decided []string
	for _, d := range ds {
		if _, ok := d.Metadata[agentrunner.MetaAlwaysAllow]; ok {
			return nil, Errorf(EINVALID, "%s", errClientRule)
		}
		c := r.Call(d.CallID)
		switch {
		case c == nil || !kindFits(c.Kind, d.Action):
			bad = append(bad, answerNoun(d.Action)+" "+d.CallID)
		case c.Status != CallPending:
			decided = append(decided, fmt.Sprintf("%s (%s by %s)", c.ID, c.Status, c.DecidedBy))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return nil, Errorf(EINVALID, "answers must name calls of this request under their kind (approvals answer approvals, calls answer the others): %s", strings.Join(bad, ", "))
	}
	if len(decided) > 0 {
		slices.Sort(decided)
		return nil, Errorf(ECONFLICT, "already decided: %s", strings.Join(decided, ", "))
	}
	res := agentrunner.NewDeferredToolResults()
	for _, d := range ds {
		c := r.Call(d.CallID)
		if err := s.addResult(ctx, r, c, d, res); err != nil {
			return nil, err
		}
		if d.By != "" {
			// Who answered is the authenticated client; a name the client
			// gives is kept after it, never alone.
			res.AnsweredBy[c.ID] = client + "/" + d.By
		}
	}
	return res, nil
}

// answerNoun names an answer by where the wire format puts it: approvals
// answer approvals, calls answer questions and external calls.
func answerNoun(a Action) string {
	if a == ActionApprove || a == ActionDeny {
		return "approval"
	}
	return "call"
}

func (s *Service) addResult(ctx context.Context, r *Request, c *Call, d Decision, res *agentrunner.DeferredToolResults) error {
	if len(d.Metadata) > 0 {
		res.Metadata[c.ID] = d.Metadata
	}
	switch d.Action {
	case ActionApprove:
		ar := agentrunner.Approve()
		if len(d.OverrideArgs) > 0 {
			args, err := s.CheckEdit(ctx, r, c, d.OverrideArgs)
			if err != nil {
				return Errorf(ErrorCode(err), "approvals[%q].override_args: %s", c.ID, ErrorMessage(err))
			}
			ar.OverrideArgs = args
		}
		res.Approvals[c.ID] = ar
	case ActionDeny:
		res.Approvals[c.ID] = agentrunner.Deny(d.Reason)
	case ActionAnswer:
		res.Calls[c.ID] = agentrunner.CallResult{Value: d.Answer}
	case ActionFail:
		res.Calls[c.ID] = agentrunner.Fail(d.Reason)
	case ActionRetry:
		res.Calls[c.ID] = agentrunner.RetryWith(d.Reason)
	}
	return nil
}

func kindFits(kind agentrunner.CallKind, a Action) bool {
	if kind == agentrunner.KindApproval {
		return a == ActionApprove || a == ActionDeny
	}
	return a == ActionAnswer || a == ActionFail || a == ActionRetry
}

// Cancel ends by's pending request with no decision: the run is told so,
// and the cards say it. Only the API client that owns a request may cancel
// it (ENOTFOUND otherwise).
func (s *Service) Cancel(ctx context.Context, token string, by Decider) (*Request, error) {
	r, err := s.store.Get(ctx, token)
	if err != nil {
		return nil, err
	}
	if err := s.authorize(ctx, r, nil, by, ""); err != nil {
		return nil, err
	}
	return s.endBySystem(ctx, token, func() (*Request, error) {
		return s.store.Cancel(ctx, token, by.Client)
	})
}

// Fail ends a pending request that could not be asked for (its opening
// or its run's ask failed after it was recorded) with reason, by
// BySlackbot, as every end without a person (endBySystem): the waiter is
// told "no decision", the cards already posted say it and lose their
// buttons, the calls are counted, and the run resumes. It returns
// ENOTFOUND or the request's end.
func (s *Service) Fail(ctx context.Context, token, reason string) (*Request, error) {
	return s.endBySystem(ctx, token, func() (*Request, error) {
		return s.store.Fail(ctx, token, BySlackbot, reason)
	})
}

// approversUnavailable is the error of a decision whose approvers could
// not be looked up (a usergroup lookup failed): not a refusal, nothing is
// audited, the person may try again.
func approversUnavailable(what string, err error) *Error {
	return &Error{Code: EUNAVAILABLE, Message: "The approvers of this request could not be looked up.", Err: fmt.Errorf("%s: %w", what, err)}
}
