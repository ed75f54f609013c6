package approval

import (
	"context"
	"errors"
	"fmt"

	"github.com/slackapprove/slackbot/agentrunner"
)

// Batch decisions: "Approve all N" / "Deny all N" on a request whose
// calls several wait for a person. A batch is no decision of its own: it
// is the person's decision on each pending approval in turn, through the
// path a click on that call's card takes (decideOne), so each call is
// authorized against its own route, counts one vote toward its own quorum,
// is audited once, and is recorded once by the store's script whatever
// else decides it at the same time. What the batch could not decide stays
// pending, and the Batch says why.

// Batch is what DecideAll did on each pending approval of a request, in
// the order of the request's calls.
type Batch struct {
	// Action is the batch's: approve or deny.
	Action Action
	// Decided are the calls on which the person's decision (or, on a call
	// that needs several approvers, their vote) was recorded.
	Decided []BatchCall
	// Left are the calls the batch left as they were, each with why.
	Left []BatchCall
}

// BatchCall is one call of a batch: the call as the batch found it, the
// tool as people see it, and what became of it.
type BatchCall struct {
	Call *Call
	// Tool is the call's tool as people see it (Viewer.ToolLabel).
	Tool string
	// Res is the store's answer; with EDECIDED, the decision already made.
	Res *Decided
	// Err says why a left call was left: a refusal (ENOTAPPROVER,
	// ESELFAPPROVAL, …), EDECIDED, ETOOLATE, EUNAVAILABLE, or another
	// error of Decide.
	Err error
}

// PendingApprovals are the calls of r a batch decides: its approvals
// still pending, in the order of its calls. Questions and external calls
// need an answer of their own, so no batch covers them.
func (r *Request) PendingApprovals() []*Call {
	var out []*Call
	for i := range r.Calls {
		if c := &r.Calls[i]; c.Kind == agentrunner.KindApproval && c.Status == CallPending {
			out = append(out, c)
		}
	}
	return out
}

// DecideAll is a person's "Approve all" or "Deny all" on r: d, their
// decision, on every pending approval of r in turn (PendingApprovals),
// each exactly as a click on that call's card would decide it (DecideOn:
// authorization against the call's route, the self-approval rule, one vote
// toward its quorum, a refusal audited). d.CallID names the call whose
// card (or Home row, by.Home) the click came from; d.Action is approve or
// deny, with d.Reason for a denial and d.NotAfter as DecideOn takes it; a
// batch carries no grant, no agent rule and no edited arguments (EINVALID),
// which each need a card of their own. A call the person may not decide,
// or that something else decided first, is left pending and named in
// Batch.Left with its error; once d.NotAfter or ctx's deadline passes the
// remaining calls are left with ETOOLATE, never sent.
//
// Errors, with nothing decided: EINVALID, ENOTFOUND (no such call),
// EWRONGMESSAGE (the click's message is not the named call's card,
// audited), the request's end (EEXPIRED, ECANCELLED, ERESOLVED, EFAILED),
// and EDECIDED when no approval of r is pending. A decision whose
// recording is uncertain (EINTERNAL: the store's reply was lost) ends the
// batch there: the error is returned with the Batch, that call in
// Batch.Left with it and the calls after it with ETOOLATE (never sent).
func (s *Service) DecideAll(ctx context.Context, r *Request, by Decider, d Decision) (*Batch, error) {
	if by.User == "" || by.Client != "" || (d.Action != ActionApprove && d.Action != ActionDeny) {
		return nil, Errorf(EINVALID, "decide all: a person approves or denies all the pending calls of a request")
	}
	if d.StepUp != nil {
		return nil, errForeignProof
	}
	return s.decideAll(ctx, r, by, d, nil)
}

// decideAll is DecideAll over calls (nil: r's pending approvals). With no
// step-up proof in d, an approval of which any call the person may
// approve needs one is refused whole (ESTEPUP), nothing recorded: one
// proof then approves the batch (BeginStepUp with its calls), rather than
// a batch that approves some calls and leaves the rest to a page.
func (s *Service) decideAll(ctx context.Context, r *Request, by Decider, d Decision, calls []*Call) (*Batch, error) {
	if d.Grant != 0 || d.AlwaysAllow || len(d.OverrideArgs) > 0 || len(d.Answer) > 0 {
		return nil, Errorf(EINVALID, "“Approve all” approves each call as it was asked: a grant, an agent's rule or edited arguments are given on the call's own card.")
	}
	from := r.Call(d.CallID)
	if from == nil {
		return nil, fmt.Errorf("decide all %s: %w", d.CallID, ErrNotFound)
	}
	if from.Message.Channel != "" && !by.Home && by.Message != from.Message {
		refused := Errorf(EWRONGMESSAGE, "This button does not belong to the message of this request.")
		s.Refuse(ctx, r, from, by, refused)
		return nil, refused
	}
	if err := r.EndErr(); err != nil {
		return nil, err
	}
	if calls == nil {
		calls = r.PendingApprovals()
	}
	if len(calls) == 0 {
		return nil, Errorf(EDECIDED, "No call of this request waits for a decision.")
	}
	if d.Action == ActionApprove && d.StepUp == nil && s.batchNeedsStepUp(ctx, r, by, calls) {
		return nil, errStepUp()
	}
	b := &Batch{Action: d.Action}
	var latest *Request // the record after the batch's last decision
	moved := false      // a decision took a call out of the pending ones
	defer func() {
		if moved {
			s.updateOtherCards(ctx, latest, "")
		}
	}()
	for i, c := range calls {
		if late := s.batchLate(ctx, d); late != nil {
			for _, c := range calls[i:] {
				b.Left = append(b.Left, s.batchCall(r, c, nil, late))
			}
			break
		}
		one := d
		one.CallID = c.ID
		// The click came from one card of r; each call is decided as a
		// click on its own card.
		byc := by
		if !by.Home {
			byc.Message = c.Message
		}
		res, err := s.decideOne(ctx, r, byc, one, false)
		if err == nil && !res.Changed {
			err = ErrDecided // the same decision, recorded before: a repeat
		}
		if err != nil {
			b.Left = append(b.Left, s.batchCall(r, c, res, err))
			if ErrorCode(err) == EINTERNAL {
				// Whether it was recorded is unknown: no more is sent.
				for _, c := range calls[i+1:] {
					b.Left = append(b.Left, s.batchCall(r, c, nil, ErrTooLate))
				}
				return b, err
			}
			continue
		}
		if res.Request != nil {
			latest = res.Request
		}
		moved = moved || (res.Changed && res.Call != nil && res.Call.Status != CallPending)
		b.Decided = append(b.Decided, s.batchCall(r, c, res, nil))
	}
	return b, nil
}

// batchNeedsStepUp reports whether by's approval of one of calls (one
// they may approve: the others are left with their refusal) needs a
// step-up proof.
func (s *Service) batchNeedsStepUp(ctx context.Context, r *Request, by Decider, calls []*Call) bool {
	for _, c := range calls {
		if _, need := s.needsStepUp(ctx, c, stepUpArgs(r, c, nil)); !need {
			continue
		}
		byc := by
		if !by.Home {
			byc.Message = c.Message
		}
		if s.authorize(ctx, r, c, byc, ActionApprove) == nil {
			return true
		}
	}
	return false
}

// batchLate is ETOOLATE once ctx's deadline or d.NotAfter has passed by
// this process's clock: a decision sent then might be recorded after the
// caller stopped waiting. The store's own check of NotAfter still holds
// for a decision sent just before.
func (s *Service) batchLate(ctx context.Context, d Decision) error {
	if err := ctx.Err(); err != nil {
		return &Error{Code: ETOOLATE, Message: ErrTooLate.Message, Err: err}
	}
	if !d.NotAfter.IsZero() && !s.now().Before(d.NotAfter) {
		return ErrTooLate
	}
	return nil
}

func (s *Service) batchCall(r *Request, c *Call, res *Decided, err error) BatchCall {
	call, _ := r.Requests.Call(c.ID)
	return BatchCall{Call: c, Tool: Viewer{Routes: s.routes}.ToolLabel(call.ToolName), Res: res, Err: err}
}

// updateOtherCards brings up to date, after the caller's answer, the cards
// of the pending approvals of req (the record after a decision that took
// a call out of them) but except: each of those cards counts them
// ("Approve all N"), and the last one left offers no batch. The update is
// not scheduled durably: a card left behind shows a count too high, and a
// click on it still decides only what is pending.
func (s *Service) updateOtherCards(ctx context.Context, req *Request, except string) {
	if req == nil {
		return
	}
	var ids []string
	for _, c := range req.PendingApprovals() {
		if c.ID != except {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	token := req.Token
	s.later(ctx, "update the cards of the other pending calls", func(ctx context.Context) error {
		var errs []error
		for _, id := range ids {
			errs = append(errs, s.UpdateCard(ctx, token, id))
		}
		return errors.Join(errs...)
	})
}
