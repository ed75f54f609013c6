package bot

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// stubStore is an approval.Store that stores nothing: the fakes of these
// tests embed it and implement what they need.
type stubStore struct{}

var _ approval.Store = stubStore{}

var errStub = errors.New("not supported by this fake")

func (stubStore) Create(context.Context, *approval.Request) error { return errStub }
func (stubStore) Get(context.Context, string) (*approval.Request, error) {
	return nil, approval.ErrNotFound
}
func (stubStore) SetMessage(context.Context, string, string, approval.MessageRef) error { return nil }
func (stubStore) Decide(context.Context, string, approval.Decision) (*approval.Decided, error) {
	return nil, errStub
}
func (stubStore) Answer(context.Context, string, string, *agentrunner.DeferredToolResults) (*approval.Request, error) {
	return nil, errStub
}
func (stubStore) Cancel(context.Context, string, string) (*approval.Request, error) {
	return nil, errStub
}
func (stubStore) Fail(context.Context, string, string, string) (*approval.Request, error) {
	return nil, errStub
}
func (stubStore) SetOutcome(context.Context, string, string, approval.Outcome) error { return nil }
func (stubStore) ReportOutcome(context.Context, string, string, string, approval.Outcome) (approval.Outcome, bool, error) {
	return approval.Outcome{}, false, nil
}
func (stubStore) Refused(context.Context, string, string, string, string, string) error {
	return nil
}
func (stubStore) Note(context.Context, string, string, string, string) error { return nil }
func (stubStore) LockCard(context.Context, string, string, string) (*approval.Request, error) {
	return nil, approval.ErrNotFound
}
func (stubStore) ReleaseCard(context.Context, string, string, string, string) error { return nil }
func (stubStore) ScheduleCards(context.Context, string, string) error               { return nil }
func (stubStore) Sweep(context.Context) ([]*approval.Request, error)                { return nil, nil }
func (stubStore) AuditPolicy(context.Context, approval.PolicyDecision) error        { return nil }
func (stubStore) SaveStepUpLink(context.Context, *approval.StepUpLink) error        { return errStub }
func (stubStore) StepUpLink(context.Context, string) (*approval.StepUpLink, error) {
	return nil, approval.ErrNotFound
}
func (stubStore) TakeStepUpLink(context.Context, string) (*approval.StepUpLink, error) {
	return nil, approval.ErrNotFound
}

// applyDecision records d on c as the store does for a first decision: its
// status, who decided, and the decision, decoded from the wire format
// the store keeps.
func applyDecision(c *approval.Call, d approval.Decision) {
	c.DecidedBy = d.By
	var res any
	switch d.Action {
	case approval.ActionApprove:
		c.Status = approval.CallApproved
		r := agentrunner.Approve()
		r.OverrideArgs = d.OverrideArgs
		res = r
	case approval.ActionDeny:
		c.Status = approval.CallDenied
		res = agentrunner.Deny(d.Reason)
	case approval.ActionAnswer:
		c.Status = approval.CallAnswered
		var r agentrunner.CallResult
		if json.Unmarshal(d.Answer, &r) != nil {
			r = agentrunner.CallResult{Value: d.Answer}
		}
		res = r
	case approval.ActionFail:
		c.Status = approval.CallFailed
		res = agentrunner.Fail(d.Reason)
	}
	b, err := json.Marshal(res)
	if err != nil {
		panic(err)
	}
	if err := c.DecodeResult(b); err != nil {
		panic(err)
	}
}
