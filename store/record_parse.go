package store

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// errDuplicate is Create's and Open's error for a token that exists.
var errDuplicate = &approval.Error{Code: approval.ECONFLICT, Message: "resume token already exists"}

// codeErr maps the error codes of the scripts to approval's errors.
func codeErr(code string) error {
	if !strings.HasPrefix(code, "e:") {
		return nil
	}
	switch code {
	case "e:notfound":
		return approval.ErrNotFound
	case "e:notpending":
		return approval.ErrNotPending
	case "e:duplicate":
		return errDuplicate
	case "e:decided":
		return approval.ErrDecided
	case "e:invalid":
		return approval.ErrInvalid
	case "e:resolved":
		return approval.ErrResolved
	case "e:expired":
		return approval.ErrExpired
	case "e:cancelled":
		return approval.ErrCancelled
	case "e:failed":
		return approval.ErrFailed
	case "e:late":
		return approval.ErrTooLate
	case "e:recording":
		return approval.ErrRecording
	}
	return fmt.Errorf("unexpected script reply %q", code)
}

// flatMap turns the flat name/value list of HGETALL in a script reply into
// a map.
func flatMap(kv []string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// parseState reads a token's state: "open" in Redis is pending.
func parseState(v string) approval.State {
	if v == redisOpen {
		return approval.StatePending
	}
	return approval.State(v)
}

// parseOrigin reads who asked and where from a record (see recordFields):
// a requester "api:<name>" is an API client's, whose client field names it
// (records of runs with an API origin had none: the name is the client).
func parseOrigin(m map[string]string) approval.Origin {
	o := approval.Origin{Team: m["team"], Channel: m["channel"], ThreadTS: m["thread"], Client: m["client"]}
	name, api := strings.CutPrefix(m["requester"], approval.APIClientPrefix)
	switch {
	case !api:
		o.User = m["requester"]
	case o.Client == "":
		o.Client = name
	case name != o.Client:
		o.Name = name
	}
	return o
}

// callEnd is the status a call still pending ("undecided") when its token
// ended takes: the token's end, with the token's reason for a failure.
func callEnd(c *approval.Call, a *approval.Request) {
	switch a.State {
	case approval.StateExpired:
		c.Status = approval.CallExpired
	case approval.StateCancelled:
		c.Status = approval.CallCancelled
	default:
		c.Status = approval.CallFailed
		c.Reason = a.Reason
	}
}

// parseApproval reads a record written by the scripts, decoding each
// call's decision once (approval.Call.DecodeResult). It signs nothing:
// receipts are added when results are handed out (approval.Request.Results).
func (s *Store) parseApproval(token string, m map[string]string) (*approval.Request, error) {
	a := &approval.Request{
		Token:       token,
		RunID:       m["run"],
		Origin:      parseOrigin(m),
		CreatedAt:   fromMS(m["created"]),
		ExpiresAt:   fromMS(m["exp"]),
		State:       parseState(m["state"]),
		EndedAt:     fromMS(m["ended"]),
		EndedBy:     m["endby"],
		Reason:      m["reason"],
		Context:     m["ctx"],
		CallbackURL: m["cb"],
	}
	n, _ := strconv.Atoi(m["n"])
	a.Calls = make([]approval.Call, n)
	for i := range n {
		cs, err := parseCall(m, i, a)
		if err != nil {
			return nil, err
		}
		a.Calls[i] = cs
	}
	parseVotes(m, a.Calls)
	if raw := m["raw"]; raw != "" && n == 0 {
		// Only replicas from before approval became the one writer wrote
		// raw (a token resolved before its calls were recorded); a record
		// one of them left behind during a rolling deploy still reads.
		a.Given = agentrunner.NewDeferredToolResults()
		if err := json.Unmarshal([]byte(raw), a.Given); err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
	}
	return a, nil
}

// parseCall reads the i-th (from 0) call of a record, adding it to
// a.Requests: its decision (field res, in the wire format) and the results
// metadata given with it (md) are decoded here, once.
func parseCall(m map[string]string, i int, a *approval.Request) (approval.Call, error) {
	p := "c" + strconv.Itoa(i+1) + "."
	need, _ := strconv.Atoi(m[p+"need"])
	cs := approval.Call{
		ID:        m[p+"id"],
		Tool:      m[p+"tool"],
		Kind:      agentrunner.CallKind(m[p+"kind"]),
		Route:     m[p+"route"],
		Required:  max(need, 1),
		Status:    approval.CallStatus(m[p+"st"]),
		DecidedBy: m[p+"by"],
		DecidedAt: fromMS(m[p+"at"]),
		// The answer script records act "answer": the request's own API
		// client answered, not a person or a rule.
		ByClient: m[p+"act"] == "answer",
		Message:  approval.MessageRef{Channel: m[p+"ch"], ID: m[p+"ts"]},

		Rule: m[p+"rule"], PolicyError: m[p+"perr"],
	}
	switch cs.Status {
	case redisUndecided:
		callEnd(&cs, a)
	case approval.CallApproved:
		cs.ApprovedKey = m[p+"key"]
		cs.StepUp = parseStepUp(m[p+"su:"+cs.DecidedBy])
	}
	if r := m[p+"res"]; r != "" {
		if err := cs.DecodeResult([]byte(r)); err != nil {
			return cs, err
		}
	}
	if md := m[p+"md"]; md != "" {
		if err := json.Unmarshal([]byte(md), &cs.Metadata); err != nil {
			return cs, fmt.Errorf("results metadata of %s: %w", cs.ID, err)
		}
	}
	part := agentrunner.ToolCallPart{ToolName: cs.Tool, ToolCallID: cs.ID}
	if args, ok := m[p+"args"]; ok {
		part.Args = json.RawMessage(args)
	}
	if cs.Kind == agentrunner.KindApproval {
		a.Requests.Approvals = append(a.Requests.Approvals, part)
	} else {
		a.Requests.Calls = append(a.Requests.Calls, part)
	}
	if out, ok := m[p+"out"]; ok {
		var o approval.Outcome
		if err := json.Unmarshal([]byte(out), &o); err != nil {
			return cs, fmt.Errorf("outcome of %s: %w", cs.ID, err)
		}
		cs.Outcome = &o
	}
	if rq, ok := m[p+"rq"]; ok {
		var md map[string]any
		if err := json.Unmarshal([]byte(rq), &md); err != nil {
			return cs, fmt.Errorf("metadata of %s: %w", cs.ID, err)
		}
		if a.Requests.Metadata == nil {
			a.Requests.Metadata = map[string]map[string]any{}
		}
		a.Requests.Metadata[cs.ID] = md
	}
	return cs, nil
}

// parseVotes reads the votes of a record's calls: fields
// "c<i>.v:<user>" = "<key> <ms>", oldest first.
func parseVotes(m map[string]string, calls []approval.Call) {
	n := len(calls)
	for k, v := range m {
		if !strings.HasPrefix(k, "c") {
			continue
		}
		dot := strings.IndexByte(k, '.')
		if dot < 0 || !strings.HasPrefix(k[dot+1:], "v:") {
			continue
		}
		i, err := strconv.Atoi(k[1:dot])
		if err != nil || i < 1 || i > n {
			continue
		}
		key, at, _ := strings.Cut(v, " ")
		by := k[dot+3:]
		calls[i-1].Votes = append(calls[i-1].Votes, approval.Vote{By: by, Key: key, At: fromMS(at), StepUp: parseStepUp(m[k[:dot+1]+"su:"+by])})
	}
	for i := range calls {
		slices.SortFunc(calls[i].Votes, func(x, y approval.Vote) int {
			return cmp.Or(x.At.Compare(y.At), cmp.Compare(x.By, y.By))
		})
	}
}

// parseStepUp reads a vote's step-up proof (field "c<i>.su:<user>");
// nil for none, as in every record written before step-up, and for one
// that does not parse (it proves nothing then: a receipt carries no amr).
func parseStepUp(v string) *approval.StepUp {
	if v == "" {
		return nil
	}
	var su approval.StepUp
	if err := json.Unmarshal([]byte(v), &su); err != nil || su.Method == "" {
		return nil
	}
	return &su
}

// isRedisNil reports whether err is go-redis's "no such key" reply.
func isRedisNil(err error) bool { return errors.Is(err, redis.Nil) }
