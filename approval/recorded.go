package approval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/slackapprove/slackbot/agentrunner"
)

// The rules that turn a decision into the results a call resumes with
// live here, not in the store: which results each action gives (in the
// Pydantic AI wire form the record keeps), the default wording of a
// failure, which decisions are malformed, and the vote key that makes
// approvers of the same arguments count together. A Store records the
// strings below as they are; its scripts only enforce "decided once".

// RecordedDecision is a Decision in the form a Store records it.
type RecordedDecision struct {
	// Action is approve, deny, answer or fail.
	Action string
	// Key is the vote key: VoteKey of the override arguments or the
	// answer, "-" for none (a vote for the call's own arguments).
	Key string
	// ApprovalResult is the call's result if it is an approval, "" if the
	// action cannot decide an approval; CallResult its result if it is a
	// question or an external call, "" if the action cannot decide one.
	ApprovalResult, CallResult string
	// Metadata is the results metadata as JSON, "" for none.
	Metadata string
	// OverrideArgs and Answer are the compact JSON of the decision's
	// override arguments and answer, "" for none.
	OverrideArgs, Answer string
	// StepUp is the JSON of an approval's step-up proof, "" for none;
	// StepUpAMR its AMR joined by spaces, for the audit stream.
	StepUp, StepUpAMR string
}

// Recorded checks d and returns the form a Store records it in. It
// returns ErrInvalid for a malformed decision: no call or decider, an
// unknown action, override arguments that are not a JSON object or come
// without an approval, an answer without the answer action or not JSON.
func (d Decision) Recorded() (RecordedDecision, error) {
	if d.CallID == "" || d.By == "" {
		return RecordedDecision{}, fmt.Errorf("%w: a decision needs a call id and who decided", ErrInvalid)
	}
	switch d.Action {
	case ActionApprove, ActionDeny, ActionFail:
	case ActionAnswer:
		if d.Answer == nil {
			return RecordedDecision{}, fmt.Errorf("%w: an answer needs a value", ErrInvalid)
		}
	default:
		return RecordedDecision{}, fmt.Errorf("%w: unknown action %q: set one of approve, deny, answer, fail", ErrInvalid, d.Action)
	}
	if d.OverrideArgs != nil && d.Action != ActionApprove {
		return RecordedDecision{}, fmt.Errorf("%w: override arguments come only with an approval", ErrInvalid)
	}
	if d.Answer != nil && d.Action != ActionAnswer {
		return RecordedDecision{}, fmt.Errorf("%w: an answer comes only with the answer action", ErrInvalid)
	}
	p := RecordedDecision{Key: "-", Action: string(d.Action)}
	if d.Metadata != nil {
		b, err := json.Marshal(d.Metadata)
		if err != nil {
			return RecordedDecision{}, fmt.Errorf("%w: metadata: %v", ErrInvalid, err)
		}
		p.Metadata = string(b)
	}
	if d.StepUp != nil && d.Action == ActionApprove {
		b, err := json.Marshal(d.StepUp)
		if err != nil {
			return RecordedDecision{}, fmt.Errorf("%w: step-up: %v", ErrInvalid, err)
		}
		p.StepUp, p.StepUpAMR = string(b), strings.Join(d.StepUp.AMR, " ")
	}
	var err error
	switch d.Action {
	case ActionApprove:
		err = p.approve(d.OverrideArgs)
	case ActionDeny:
		err = p.deny(d.Reason)
	case ActionAnswer:
		err = p.answerWith(d.Answer)
	case ActionFail:
		msg := d.Reason
		if msg == "" {
			msg = "The tool call failed."
		}
		p.CallResult, err = marshalCall(agentrunner.Fail(msg))
	}
	return p, err
}

// approve records an approval, with override arguments when not nil.
func (p *RecordedDecision) approve(override json.RawMessage) error {
	r := agentrunner.Approve()
	if override != nil {
		// Decoding the wire form normalizes the arguments exactly as an
		// override arriving over the HTTP API would be.
		wire, err := json.Marshal(map[string]json.RawMessage{"kind": json.RawMessage(`"tool-approved"`), "override_args": override})
		if err != nil {
			return fmt.Errorf("%w: override args: %v", ErrInvalid, err)
		}
		if err := json.Unmarshal(wire, &r); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if r.OverrideArgs != nil {
			var buf bytes.Buffer
			if err := json.Compact(&buf, r.OverrideArgs); err != nil {
				return fmt.Errorf("%w: override args: %v", ErrInvalid, err)
			}
			r.OverrideArgs = buf.Bytes()
			p.OverrideArgs = buf.String()
			p.Key = VoteKey(buf.Bytes())
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	p.ApprovalResult = string(b)
	return nil
}

// deny records a denial: of an approval with reason, or, on a question or
// external call, a failure with reason (or the default denial message).
func (p *RecordedDecision) deny(reason string) error {
	b, err := json.Marshal(agentrunner.Deny(reason))
	if err != nil {
		return fmt.Errorf("denial: %w", err)
	}
	p.ApprovalResult = string(b)
	if reason == "" {
		reason = agentrunner.DefaultDenialMessage
	}
	p.CallResult, err = marshalCall(agentrunner.Fail(reason))
	return err
}

// answerWith records the answer to a question or external call.
func (p *RecordedDecision) answerWith(answer json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Compact(&buf, answer); err != nil {
		return fmt.Errorf("%w: answer is not JSON: %v", ErrInvalid, err)
	}
	var r agentrunner.CallResult
	if err := json.Unmarshal(buf.Bytes(), &r); err != nil {
		return fmt.Errorf("%w: answer: %v", ErrInvalid, err)
	}
	var err error
	if p.CallResult, err = marshalCall(r); err != nil {
		return err
	}
	p.Answer = buf.String()
	p.Key = VoteKey(buf.Bytes())
	return nil
}

func marshalCall(r agentrunner.CallResult) (string, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("call result: %w", err)
	}
	return string(b), nil
}

// ArgsKey is the vote key that edited arguments equal to the call's own
// would have (the VoteKey of their compact form), so that such votes count
// with the call's own; ok is false for arguments that are not an object.
func ArgsKey(call agentrunner.ToolCallPart) (key string, ok bool) {
	obj, err := call.ArgsObject()
	if err != nil {
		return "", false
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, obj); err != nil {
		return "", false
	}
	return VoteKey(buf.Bytes()), true
}

// VoteKey names a compact JSON value (override arguments, an answer) in a
// vote or decision key.
func VoteKey(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// RecordedAnswer is one answer of an API client's results in the form a
// Store records it.
type RecordedAnswer struct {
	// ID is the call's id; Class is "approval" or "call", the kind of call
	// it must answer.
	ID, Class string
	// Result is the answer in the wire form; State the call's status it
	// gives (approved, denied, answered or failed).
	Result string
	State  CallStatus
	// By is who answered: results.AnsweredBy, or the client.
	By string
	// Metadata is the results metadata as JSON, "" for none.
	Metadata string
}

// RecordedAnswers returns the answers of results, given by by unless
// results.AnsweredBy names someone, in the form a Store records them:
// approvals first, each class in the order of its ids.
func RecordedAnswers(by string, results *agentrunner.DeferredToolResults) ([]RecordedAnswer, error) {
	var answers []RecordedAnswer
	add := func(id, class, res string, state CallStatus) error {
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
		answers = append(answers, RecordedAnswer{ID: id, Class: class, Result: res, State: state, By: who, Metadata: md})
		return nil
	}
	for _, id := range slices.Sorted(maps.Keys(results.Approvals)) {
		r := results.Approvals[id]
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("approval %s: %w", id, err)
		}
		state := CallDenied
		if r.Approved {
			state = CallApproved
		}
		if err := add(id, "approval", string(b), state); err != nil {
			return nil, err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(results.Calls)) {
		r := results.Calls[id]
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("call %s: %w", id, err)
		}
		state := CallAnswered
		if r.Failed || r.Retry {
			state = CallFailed
		}
		if err := add(id, "call", string(b), state); err != nil {
			return nil, err
		}
	}
	return answers, nil
}
