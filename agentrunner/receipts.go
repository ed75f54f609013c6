package agentrunner

import (
	"errors"
	"fmt"
	"time"

	"github.com/slackapprove/slackbot/receipt"
)

// WithReceiptKeys makes the runner verify the receipt of every approved
// call before running it (package receipt): an approval whose receipt is
// missing, signed by none of keys, for another call or tool, for other
// arguments than those that would run, or expired does not run; the model
// is told the approval could not be verified (UnverifiedMessage).
// Without this option approvals run unverified. slackbot's own runs
// always verify.
func WithReceiptKeys(keys *receipt.KeySet) Option {
	return func(r *Runner) { r.receipts = keys }
}

// WithClock sets the clock the runner judges receipts' expiry by; nil
// means time.Now.
func WithClock(now func() time.Time) Option { return func(r *Runner) { r.now = now } }

// UnverifiedPrefix starts what the model is told of an approved call that
// did not run because its receipt did not verify.
const UnverifiedPrefix = "The approval of this call could not be verified, so it did not run: "

// verifyReceipt checks the receipt in md of call, with the arguments it
// would run with; nil when the runner verifies no receipt.
func (st *run) verifyReceipt(call ToolCallPart, md map[string]any) error {
	if st.r.receipts == nil {
		return nil
	}
	args, err := call.ArgsObject()
	if err != nil {
		return err
	}
	_, err = st.r.receipts.Verify(receipt.FromMetadata(md), receipt.Expect{
		CallID: call.ToolCallID, Tool: call.ToolName, Args: args, Now: st.r.clock(),
	})
	if errors.Is(err, receipt.ErrMissing) {
		if why, ok := md[receipt.ErrorMetadataKey].(string); ok {
			return fmt.Errorf("%w (%s)", err, why)
		}
	}
	return err
}

// unverified is the return of approved call c whose receipt in md does
// not verify (the tool does not run), and true; false when it verifies,
// when the runner verifies none, or for a call that needed no approval.
func (st *run) unverified(c ToolCallPart, md map[string]any, approved bool) (callOutcome, bool) {
	if !approved {
		return callOutcome{}, false
	}
	err := st.verifyReceipt(c, md)
	if err == nil {
		return callOutcome{}, false
	}
	return callOutcome{Part: ToolReturn(c.ToolName, c.ToolCallID, jsonString(UnverifiedMessage(err)), OutcomeFailed)}, true
}

func (r *Runner) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

// UnverifiedMessage is what the model is told of an approved call whose
// receipt did not verify.
func UnverifiedMessage(err error) string { return UnverifiedPrefix + err.Error() + "." }
