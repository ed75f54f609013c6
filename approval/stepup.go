package approval

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/routing"
)

// Step-up (docs/ARCHITECTURE.md, "Step-up"): on a route with step_up, a
// person's approval of a call needs, beyond the click in Slack, a proof
// that the approver themself agreed to this very call on a device they
// hold: a passkey (WebAuthn) or, where the route allows it, a one-time
// code. A click gets ESTEPUP and records nothing; the door then asks
// BeginStepUp for a single-use link bound to the approver, the calls and
// the digest of the arguments that would run; package stepup verifies the
// proof over StepUpChallenge(link) and hands it to CompleteStepUp, which
// decides through the path of a click (decideOne), with the proof
// recorded on the vote, in the audit stream and on the receipt (amr).
// Only CompleteStepUp attaches a proof: a door's Decision that carries one
// is refused, so no door can claim a step-up it did not get.

// ESTEPUP: the approval needs a step-up proof first (HTTP 403); nothing
// was recorded.
const ESTEPUP = "step_up_required"

// StepUpLinkTTL is how long a step-up link may be used: long enough to
// find one's security key, short enough that a link left in a chat is
// worthless soon.
const StepUpLinkTTL = 5 * time.Minute

// StepUp is the verified proof of a step-up, recorded with the approval it
// allowed.
type StepUp struct {
	// Method is routing.StepUpWebAuthn or routing.StepUpTOTP.
	Method string `json:"method"`
	// AMR are the authentication method references (RFC 8176) of the
	// proof: ["hwk"] for a passkey, ["otp"] for a one-time code.
	AMR []string `json:"amr"`
	// CredentialID is the base64url WebAuthn credential id, or "totp".
	CredentialID string    `json:"cred"`
	At           time.Time `json:"at"`
}

// StepUpLink is a single-use permission, for one approver, to approve the
// calls it names with the arguments it names, once they give a step-up
// proof over StepUpChallenge of it.
type StepUpLink struct {
	// ID is the link's secret name: 32 random bytes, base64url.
	ID string
	// Team and User are the approver the link is bound to.
	Team, User string
	// Token is the resume token of the request.
	Token string
	// Calls are the calls it approves: one (a click), or a batch's.
	Calls []StepUpCall
	// Grant and AlwaysAllow are the click's "Approve for …" and "Approve
	// and always allow" (one call only).
	Grant       time.Duration
	AlwaysAllow bool
	// OverrideArgs are the arguments the approver edited the call to run
	// with (one call only), as CheckEdit accepted them; nil for none.
	OverrideArgs json.RawMessage
	// Batch: the link is an "Approve all" (its calls are decided as
	// DecideAll decides them, each as a click on its own card).
	Batch bool
	// Home and Message are where the click came from, for the decision.
	Home    bool
	Message MessageRef
	// Methods are the step-up methods every call's route accepts.
	Methods []string
	Expires time.Time
}

// StepUpCall is one call of a step-up link and the hex SHA-256 of the
// canonical arguments (RFC 8785) that would run when it is approved.
type StepUpCall struct{ CallID, ArgsDigest string }

// StepUpStore keeps step-up links (approval.Store includes it).
type StepUpStore interface {
	// SaveStepUpLink stores l until shortly after l.Expires.
	SaveStepUpLink(ctx context.Context, l *StepUpLink) error
	// StepUpLink reads link id without using it; ENOTFOUND when it is
	// unknown, used or gone.
	StepUpLink(ctx context.Context, id string) (*StepUpLink, error)
	// TakeStepUpLink reads and deletes link id in one step, so that only
	// one caller ever gets it; ENOTFOUND when it is unknown, used or gone.
	TakeStepUpLink(ctx context.Context, id string) (*StepUpLink, error)
}

// amrOf are the RFC 8176 method references of a step-up method.
var amrOf = map[string][]string{routing.StepUpWebAuthn: {"hwk"}, routing.StepUpTOTP: {"otp"}}

// stepUpArgs are the arguments that would run if d approved c of r: an
// edit's, else the call's own.
func stepUpArgs(r *Request, c *Call, edit json.RawMessage) json.RawMessage {
	if len(edit) > 0 {
		return edit
	}
	call, _ := r.Requests.Call(c.ID)
	return call.Args
}

// needsStepUp reports whether an approval of c of r with args needs a
// proof. A condition that cannot be judged needs one (routing fails
// closed); the error is logged, not returned.
func (s *Service) needsStepUp(ctx context.Context, c *Call, args json.RawMessage) (*routing.Route, bool) {
	route := s.Route(c.Route)
	need, err := route.NeedsStepUp(args)
	if err != nil {
		s.log.WarnContext(ctx, "judge step_up; asking for a step-up", "err", err, "call", c.ID)
	}
	return route, need
}

// checkStepUp refuses (ESTEPUP) a person's approval d of c of r that
// needs a step-up proof it does not carry, or carries one of a method the
// route does not accept. d.OverrideArgs are CheckEdit's already.
func (s *Service) checkStepUp(ctx context.Context, r *Request, c *Call, d Decision) error {
	if d.Action != ActionApprove {
		return nil // Deny never needs step-up.
	}
	route, need := s.needsStepUp(ctx, c, stepUpArgs(r, c, d.OverrideArgs))
	switch {
	case !need:
		return nil
	case d.StepUp == nil:
		return errStepUp()
	case !route.AllowsStepUp(d.StepUp.Method):
		return Errorf(ESTEPUP, "This approval needs your passkey; a %s does not count on route %s. Nothing changed.", d.StepUp.Method, route.Name)
	}
	return nil
}

func errStepUp() *Error {
	return Errorf(ESTEPUP, "This approval needs your passkey: verify it's you on slackbot's page first. Nothing changed.")
}

// errForeignProof refuses a Decision a door made with a step-up proof in
// it: only CompleteStepUp, after a link was used, attaches one.
var errForeignProof = Errorf(EINVALID, "a step-up proof is given only through the step-up page")

// BeginStepUp makes the single-use link with which by, whose approval d
// was refused with ESTEPUP, completes it with a step-up proof. callIDs
// are the calls a batch ("Approve all") covers; none: d.CallID alone.
// It authorizes as the approval would be (Authorize, the grant and
// always-allow checks, the edit), so that nobody gets a link for what
// they could not approve; a batch's link holds the pending approvals by
// may approve (EDECIDED if none). The link expires after StepUpLinkTTL.
//
// Errors: EINVALID (not a person's approval; a batch with a grant, rule
// or edit), ENOTFOUND, the request's end, EDECIDED, the refusals of
// Authorize, EINVALID or EPOLICY for an edit, and the store's.
func (s *Service) BeginStepUp(ctx context.Context, r *Request, by Decider, d Decision, callIDs ...string) (*StepUpLink, error) {
	if by.User == "" || by.Client != "" || d.Action != ActionApprove {
		return nil, Errorf(EINVALID, "step-up: only a person's approval steps up")
	}
	if len(callIDs) == 0 {
		callIDs = []string{d.CallID}
	}
	batch := len(callIDs) > 1 || callIDs[0] != d.CallID
	if batch && (d.Grant != 0 || d.AlwaysAllow || len(d.OverrideArgs) > 0) {
		return nil, Errorf(EINVALID, "“Approve all” approves each call as it was asked: a grant, an agent's rule or edited arguments are given on the call's own card.")
	}
	if err := r.EndErr(); err != nil {
		return nil, err
	}
	from := r.Call(d.CallID)
	if from == nil {
		return nil, fmt.Errorf("step-up %s: %w", d.CallID, ErrNotFound)
	}
	l := &StepUpLink{Team: r.Origin.Team, User: by.User, Token: r.Token, Grant: d.Grant, AlwaysAllow: d.AlwaysAllow,
		Batch: batch, Home: by.Home, Message: by.Message, Expires: s.now().Add(StepUpLinkTTL)}
	if by.Team != "" {
		l.Team = by.Team
	}
	var routes []*routing.Route
	if !batch {
		c, edit, err := s.authorizeStepUp(ctx, r, from, by, d)
		if err != nil {
			return nil, err
		}
		l.OverrideArgs = edit
		if err := l.add(r, c, &routes, s); err != nil {
			return nil, err
		}
	} else {
		if from.Message.Channel != "" && !by.Home && by.Message != from.Message {
			refused := Errorf(EWRONGMESSAGE, "This button does not belong to the message of this request.")
			s.Refuse(ctx, r, from, by, refused)
			return nil, refused
		}
		var first error
		for _, id := range callIDs {
			c := r.Call(id)
			if c == nil || c.Kind != agentrunner.KindApproval || c.Status != CallPending {
				continue
			}
			byc := by
			if !by.Home {
				byc.Message = c.Message
			}
			// Not audited here: the batch's completion decides each call
			// through decideOne, which audits what it refuses.
			if err := s.authorize(ctx, r, c, byc, ActionApprove); err != nil {
				first = cmpErr(first, err)
				continue
			}
			if err := l.add(r, c, &routes, s); err != nil {
				return nil, err
			}
		}
		if len(l.Calls) == 0 {
			if first != nil {
				return nil, first
			}
			return nil, Errorf(EDECIDED, "No call of this request waits for a decision.")
		}
	}
	l.Methods = commonMethods(routes)
	if len(l.Methods) == 0 {
		return nil, Errorf(EINVALID, "These calls' routes accept no one step-up method in common; approve them one by one.")
	}
	id, err := newLinkID()
	if err != nil {
		return nil, err
	}
	l.ID = id
	if err := s.store.SaveStepUpLink(ctx, l); err != nil {
		return nil, fmt.Errorf("step-up: save the link: %w", err)
	}
	s.log.InfoContext(ctx, "step-up link made", "by", by.User, "calls", len(l.Calls))
	return l, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// authorizeStepUp checks a click's approval d of c as decideOne would
// before recording it, and returns the edit as CheckEdit accepted it.
func (s *Service) authorizeStepUp(ctx context.Context, r *Request, c *Call, by Decider, d Decision) (*Call, json.RawMessage, error) {
	if c.Kind != agentrunner.KindApproval || c.Status != CallPending {
		return nil, nil, Errorf(EDECIDED, "This call was already decided.")
	}
	if len(d.OverrideArgs) > 0 && !s.editable(r, c) {
		return nil, nil, Errorf(EINVALID, "slackbot does not know this tool's arguments, so they cannot be edited here.")
	}
	if d.Grant != 0 {
		if err := s.checkGrant(r, c, d); err != nil {
			return nil, nil, err
		}
	}
	if d.AlwaysAllow {
		if err := s.checkAlwaysAllow(r, c, d); err != nil {
			return nil, nil, err
		}
	}
	if err := s.Authorize(ctx, r, c, by, ActionApprove); err != nil {
		return nil, nil, err
	}
	if d.Grant > 0 || d.AlwaysAllow {
		if err := s.checkGrantor(ctx, r, c, by); err != nil {
			return nil, nil, err
		}
	}
	var edit json.RawMessage
	if len(d.OverrideArgs) > 0 {
		var err error
		if edit, err = s.CheckEdit(ctx, r, c, d.OverrideArgs); err != nil {
			return nil, nil, err
		}
	}
	return c, edit, nil
}

// add puts call c of r into l with the digest of the arguments that
// would run, and its route among routes when it needs step-up.
func (l *StepUpLink) add(r *Request, c *Call, routes *[]*routing.Route, s *Service) error {
	args := stepUpArgs(r, c, l.OverrideArgs)
	digest, err := ArgsDigest(args)
	if err != nil {
		return Errorf(EINVALID, "call %s: its arguments cannot be bound to a step-up: %v", c.ID, err)
	}
	l.Calls = append(l.Calls, StepUpCall{CallID: c.ID, ArgsDigest: digest})
	if route, need := s.needsStepUp(context.Background(), c, args); need && route != nil {
		*routes = append(*routes, route)
	}
	return nil
}

// commonMethods are the step-up methods every one of routes accepts, in
// the order of routing's list (a passkey first); a passkey when none.
func commonMethods(routes []*routing.Route) []string {
	out := []string{}
	for _, m := range []string{routing.StepUpWebAuthn, routing.StepUpTOTP} {
		ok := true
		for _, r := range routes {
			ok = ok && r.AllowsStepUp(m)
		}
		if ok && (len(routes) > 0 || m == routing.StepUpWebAuthn) {
			out = append(out, m)
		}
	}
	return out
}

// ArgsDigest is the hex SHA-256 of the canonical form (RFC 8785) of the
// arguments args (an object, or a JSON string holding one): what a
// step-up link binds.
func ArgsDigest(args json.RawMessage) (string, error) {
	obj, err := (agentrunner.ToolCallPart{Args: args}).ArgsObject()
	if err != nil {
		return "", err
	}
	canon, err := receipt.Canonical(obj)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

func newLinkID() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("step-up link id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// StepUpLink returns link id and its request as they stand, using
// nothing: for the page that shows the calls. ENOTFOUND for a link that
// is unknown, used or expired.
func (s *Service) StepUpLink(ctx context.Context, id string) (*StepUpLink, *Request, error) {
	l, err := s.store.StepUpLink(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if !s.now().Before(l.Expires) {
		return nil, nil, fmt.Errorf("step-up link: %w", ErrNotFound)
	}
	r, err := s.store.Get(ctx, l.Token)
	if err != nil {
		return nil, nil, err
	}
	return l, r, nil
}

// CompleteStepUp uses link id, for user of team who gave proof (verified
// by the caller over StepUpChallenge of the link), to decide the link's
// calls as the click that made it would have, with the proof. team and
// user must be the identity the caller verified — the owner of the
// credential that answered, as the caller's credential store has it — not
// values read back from the link: the check that they are the link's is
// then a real one (a proof by someone else's credential is refused), and
// it is only as strong as the caller's lookup. Through
// decideOne (or, for a batch, each call in turn as DecideAll does), so
// the authorization, self-approval rule, quorum and audit are a click's.
// The link is used once, whatever becomes of the decision: a second use
// is ENOTFOUND.
//
// Refused, with nothing recorded: ENOTFOUND (unknown or used link),
// EFORBIDDEN (team and user are not the link's: it stays usable by its
// person),
// EEXPIRED (the link's five minutes passed, or the request's),
// EINVALID (a proof of a method the link does not accept, or the
// arguments that would run are no longer those the link bound: "The
// arguments changed since you clicked Approve…"), the request's end,
// EDECIDED (a call decided meanwhile), and every error of decideOne. For
// a batch it returns the Decided of the last call it decided (and the
// first error if it decided none).
func (s *Service) CompleteStepUp(ctx context.Context, id, team, user string, proof StepUp) (*Decided, error) {
	l, err := s.store.StepUpLink(ctx, id)
	if err != nil {
		return nil, err
	}
	if l.User != user || l.Team != team {
		return nil, Errorf(EFORBIDDEN, "This step-up link was made for someone else: only the person who clicked Approve can use it. Nothing changed.")
	}
	if !s.now().Before(l.Expires) {
		return nil, Errorf(EEXPIRED, "This step-up link expired: click Approve again for a new one. Nothing changed.")
	}
	if err := checkProof(l, &proof, s.now()); err != nil {
		return nil, err
	}
	if l, err = s.store.TakeStepUpLink(ctx, id); err != nil {
		return nil, err // used meanwhile: single use
	}
	r, err := s.store.Get(ctx, l.Token)
	if err != nil {
		return nil, err
	}
	if err := r.EndErr(); err != nil {
		return nil, err
	}
	for _, sc := range l.Calls {
		c := r.Call(sc.CallID)
		if c == nil {
			return nil, fmt.Errorf("step-up %s: %w", sc.CallID, ErrNotFound)
		}
		if c.Status != CallPending {
			return &Decided{Request: r, Call: c, Required: c.Required}, ErrDecided
		}
		digest, err := ArgsDigest(stepUpArgs(r, c, l.OverrideArgs))
		if err != nil || digest != sc.ArgsDigest {
			return nil, Errorf(EINVALID, "The arguments changed since you clicked Approve, so this proof does not approve them. Look at the call again and click Approve. Nothing changed.")
		}
	}
	by := Decider{User: l.User, Home: l.Home, Message: l.Message}
	d := Decision{CallID: l.Calls[0].CallID, By: l.User, Action: ActionApprove, Grant: l.Grant, AlwaysAllow: l.AlwaysAllow,
		OverrideArgs: l.OverrideArgs, StepUp: &proof}
	if !l.Batch {
		return s.decideOne(ctx, r, by, d, true)
	}
	calls := make([]*Call, len(l.Calls))
	for i, sc := range l.Calls {
		calls[i] = r.Call(sc.CallID)
	}
	if !by.Home {
		// BeginStepUp checked the card the click came from; each call is
		// then decided as a click on its own card.
		by.Message = calls[0].Message
	}
	b, err := s.decideAll(ctx, r, by, d, calls)
	if err != nil {
		return nil, err
	}
	if n := len(b.Decided); n > 0 {
		return b.Decided[n-1].Res, nil
	}
	if len(b.Left) > 0 {
		return b.Left[0].Res, b.Left[0].Err
	}
	return nil, ErrDecided
}

// checkProof refuses a proof of a method l does not accept and fills in
// what the method implies: its AMR and, when zero, the time.
func checkProof(l *StepUpLink, p *StepUp, now time.Time) error {
	amr, known := amrOf[p.Method]
	if !known || !slices.Contains(l.Methods, p.Method) || p.CredentialID == "" {
		return Errorf(EINVALID, "This step-up does not count here: use one of %v. Nothing changed.", l.Methods)
	}
	p.AMR = slices.Clone(amr)
	if p.At.IsZero() {
		p.At = now
	}
	return nil
}

// StepUpChallenge is the WebAuthn challenge of link l: the SHA-256 of
// "slackbot step-up v1", the link's id, the request's token, each call id
// and its argument digest, the team, the user and the expiry (Unix
// seconds), NUL-separated. An assertion over it approves exactly these
// calls with these arguments, for this person, until then, and nothing
// else: another link's, an earlier one's, or one for other arguments has
// another challenge.
func StepUpChallenge(l *StepUpLink) []byte {
	var b bytes.Buffer
	part := func(s string) {
		b.WriteString(s)
		b.WriteByte(0)
	}
	part("slackbot step-up v1")
	part(l.ID)
	part(l.Token)
	for _, c := range l.Calls {
		part(c.CallID)
		part(c.ArgsDigest)
	}
	part(l.Team)
	part(l.User)
	part(strconv.FormatInt(l.Expires.Unix(), 10))
	sum := sha256.Sum256(b.Bytes())
	return sum[:]
}
