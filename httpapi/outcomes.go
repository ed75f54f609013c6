package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/slackapprove/slackbot/approval"
)

// outcomeRequest is the body of POST /v1/approvals/{token}/outcomes: what
// became of one approved call once the program that asked acted on the
// decision.
type outcomeRequest struct {
	ToolCallID string `json:"tool_call_id"`
	// Ran is required: a pointer tells it missing from false.
	Ran   *bool  `json:"ran"`
	Error string `json:"error"`
}

var outcomeFields = []string{"tool_call_id", "ran", "error"}

// decodeOutcome decodes and checks an outcome report and returns the
// call and the outcome it reports: ran, failed (ran with an error), or
// not_run (with why).
func decodeOutcome(body []byte) (string, approval.Outcome, error) {
	if _, err := decodeObject(body, outcomeFields); err != nil {
		return "", approval.Outcome{}, err
	}
	var req outcomeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return "", approval.Outcome{}, invalid("malformed outcome: %s", jsonProblem(err))
	}
	switch {
	case req.ToolCallID == "":
		return "", approval.Outcome{}, invalid("tool_call_id is required: the approved call whose outcome this is")
	case len(req.ToolCallID) > maxToolCallID:
		return "", approval.Outcome{}, invalid("tool_call_id is longer than %d bytes", maxToolCallID)
	case req.Ran == nil:
		return "", approval.Outcome{}, invalid("ran is required: true if the call ran, false if it did not")
	case !*req.Ran && req.Error == "":
		return "", approval.Outcome{}, invalid("error is required when ran is false: say why the call did not run")
	}
	o := approval.Outcome{Status: approval.OutcomeRan, Summary: req.Error}
	switch {
	case !*req.Ran:
		o.Status = approval.OutcomeNotRun
	case req.Error != "":
		o.Status = approval.OutcomeFailed
	}
	return req.ToolCallID, o, nil
}

// handleOutcomes serves POST /v1/approvals/{token}/outcomes: the key that
// opened the request reports what became of one of its approved calls,
// once (approval.Service.ReportOutcome); the call's card shows it.
func handleOutcomes(approvals Approvals, owners Owners, receipts approval.Signer) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, k *Key) error {
		body, err := readJSON(w, r)
		if err != nil {
			return err
		}
		callID, o, err := decodeOutcome(body)
		if err != nil {
			return err
		}
		token := r.PathValue("token")
		if err := own(r.Context(), owners, token, k); err != nil {
			return err
		}
		rec, err := approvals.ReportOutcome(r.Context(), token, approval.Decider{Client: k.Name}, callID, o)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, view(rec, receipts))
		return nil
	}
}
