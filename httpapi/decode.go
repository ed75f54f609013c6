package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// This file reads what clients send: bodies, parameters, and the wire
// format's results as decisions.

// readJSON reads a JSON request body of at most MaxBodyBytes.
func readJSON(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != "application/json" {
		return nil, &Error{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupportedMediaType,
			Message: "send the body as Content-Type: application/json"}
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, err
		}
		return nil, invalid("could not read the body: %v", err)
	}
	return b, nil
}

// decodeObject decodes a JSON object's members, refusing members whose
// names are not in known. Only the top level is strict: nested objects
// (tool calls, Pydantic AI's extra fields in them) are decoded leniently.
func decodeObject(body []byte, known []string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return nil, invalid("the body must be a JSON object: %s", jsonProblem(err))
	}
	var unknown []string
	for name := range m {
		if !slices.Contains(known, name) {
			unknown = append(unknown, strconv.Quote(name))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, invalid("unknown field %s (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return m, nil
}

func jsonProblem(err error) string {
	if err == nil {
		return "got null"
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v at byte %d", se, se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("%s: got a JSON %s, want %s", te.Field, te.Value, jsonType(te.Type.String()))
		}
		return fmt.Sprintf("got a JSON %s", te.Value)
	}
	return err.Error()
}

func jsonType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case strings.HasPrefix(goType, "map["), strings.Contains(goType, "."):
		return "an object"
	case goType == "string":
		return "a string"
	}
	return goType
}

// argsProblem says why ArgsObject refused a call's arguments: where they
// would read two ways (agentrunner.CheckArgs), or that they are no object.
func argsProblem(err error) string {
	for _, e := range []error{agentrunner.ErrArgsDuplicateName, agentrunner.ErrArgsNotUnicode, agentrunner.ErrArgsInexactNumber} {
		if errors.Is(err, e) {
			return "args: " + err.Error()
		}
	}
	return "args must be a JSON object, a string holding one, or null"
}

// decodeCreate decodes and checks a create request.
func decodeCreate(body []byte, allowPrivate bool) (*createRequest, error) {
	if _, err := decodeObject(body, createFields); err != nil {
		return nil, err
	}
	var req createRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, invalid("malformed request: %s", jsonProblem(err))
	}
	reqs := agentrunner.DeferredToolRequests{Calls: req.Calls, Approvals: req.Approvals, Metadata: req.Metadata}
	ids := reqs.IDs()
	switch {
	case len(ids) == 0:
		return nil, invalid("the request has no calls: give at least one tool call in approvals or calls")
	case len(ids) > MaxCalls:
		return nil, invalid("the request has %d calls; at most %d are allowed", len(ids), MaxCalls)
	}
	seen := map[string]bool{}
	for i, c := range slices.Concat(req.Approvals, req.Calls) {
		where := fmt.Sprintf("approvals[%d]", i)
		if i >= len(req.Approvals) {
			where = fmt.Sprintf("calls[%d]", i-len(req.Approvals))
		}
		switch {
		case c.ToolCallID == "":
			return nil, invalid("%s: tool_call_id is required", where)
		case len(c.ToolCallID) > maxToolCallID:
			return nil, invalid("%s: tool_call_id is longer than %d bytes", where, maxToolCallID)
		case seen[c.ToolCallID]:
			return nil, invalid("%s: tool_call_id %q appears twice", where, c.ToolCallID)
		case c.ToolName == "":
			return nil, invalid("%s: tool_name is required", where)
		case len(c.ToolName) > maxToolName:
			return nil, invalid("%s: tool_name is longer than %d bytes", where, maxToolName)
		}
		seen[c.ToolCallID] = true
		if err := agentrunner.CheckArgs(c.Args); errors.Is(err, agentrunner.ErrArgsTooDeep) {
			return nil, invalid("%s: args are nested deeper than %d levels", where, agentrunner.MaxArgsDepth)
		}
		if _, err := c.ArgsObject(); err != nil {
			return nil, invalid("%s: %s", where, argsProblem(err))
		}
	}
	for id, md := range req.Metadata {
		if !seen[id] {
			return nil, invalid("metadata names %q, which is not a tool_call_id of the request", id)
		}
		if err := checkArgsSchema(reqs, id, md); err != nil {
			return nil, err
		}
	}
	switch {
	case utf8.RuneCountInString(req.Requester) > maxRequester:
		return nil, invalid("requester is longer than %d characters", maxRequester)
	case utf8.RuneCountInString(req.Context) > maxContext:
		return nil, invalid("context is longer than %d characters", maxContext)
	case len(req.IdempotencyKey) > maxIdempotencyKey:
		return nil, invalid("idempotency_key is longer than %d characters", maxIdempotencyKey)
	case !utf8.ValidString(req.Requester + req.Context + req.IdempotencyKey):
		return nil, invalid("requester, context and idempotency_key must be valid UTF-8")
	}
	if err := checkCallbackURL(req.CallbackURL, allowPrivate); err != nil {
		return nil, err
	}
	return &req, nil
}

// checkArgsSchema checks the JSON Schema a client may send in a call's
// metadata (approval.ArgsSchemaKey), with which an approver can edit the
// call's arguments on its card: only an approval's, and one that compiles.
func checkArgsSchema(reqs agentrunner.DeferredToolRequests, id string, md map[string]any) error {
	if _, ok := md[approval.ArgsSchemaKey]; !ok {
		return nil
	}
	call, _ := reqs.Call(id)
	if reqs.Kind(id) != agentrunner.KindApproval {
		return invalid("metadata[%q].%s: only an approval's arguments can be edited, and %q is in calls", id, approval.ArgsSchemaKey, id)
	}
	if err := approval.CheckArgsSchema(call.ToolName, md); err != nil {
		return invalid("metadata[%q].%s%s", id, approval.ArgsSchemaKey, strings.TrimPrefix(approval.ErrorMessage(err), approval.ArgsSchemaKey))
	}
	return nil
}

// parseTimeout reads timeout: a Go duration string ("90s", "30m", "2h")
// or a number of seconds; absent or null means the routes' timeout.
func parseTimeout(raw json.RawMessage) (time.Duration, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var d time.Duration
	var s string
	var secs float64
	switch {
	case json.Unmarshal(raw, &s) == nil:
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, invalid("timeout %q: want a duration such as \"30m\" or a number of seconds", s)
		}
	case json.Unmarshal(raw, &secs) == nil:
		d = time.Duration(secs * float64(time.Second))
	default:
		return 0, invalid("timeout: want a duration such as \"30m\" or a number of seconds")
	}
	switch {
	case d < time.Second:
		return 0, invalid("timeout must be at least 1s")
	case d > MaxTimeout:
		return 0, invalid("timeout must be at most %s (7 days)", MaxTimeout)
	}
	return d, nil
}

// parseWait reads the wait parameter of a long poll: a duration ("30s")
// or seconds ("30"); at most MaxWait, longer waits are cut to it.
func parseWait(q url.Values) (time.Duration, error) {
	s := q.Get("wait")
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, nerr := strconv.ParseFloat(s, 64)
		if nerr != nil {
			return 0, invalid("wait %q: want a duration such as \"30s\" or a number of seconds", s)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return 0, invalid("wait must not be negative")
	}
	return min(d, MaxWait), nil
}

// decodeResults decodes a DeferredToolResults in Pydantic AI's wire
// format, refusing unknown top-level fields and results that answer
// nothing.
func decodeResults(body []byte) (*agentrunner.DeferredToolResults, error) {
	m, err := decodeObject(body, resultsFields)
	if err != nil {
		return nil, err
	}
	res := agentrunner.NewDeferredToolResults()
	if raw, ok := m["approvals"]; ok {
		var approvals map[string]json.RawMessage
		if err := json.Unmarshal(raw, &approvals); err != nil {
			return nil, invalid("approvals must be an object of tool_call_id to true, false or {kind: tool-approved|tool-denied, ...}")
		}
		for id, v := range approvals {
			var ar agentrunner.ApprovalResult
			if err := json.Unmarshal(v, &ar); err != nil {
				return nil, invalid("approvals[%q]: %v", id, err)
			}
			res.Approvals[id] = ar
		}
	}
	if raw, ok := m["calls"]; ok {
		if err := json.Unmarshal(raw, &res.Calls); err != nil {
			return nil, invalid("calls must be an object of tool_call_id to a result: %v", err)
		}
	}
	if raw, ok := m["metadata"]; ok {
		if err := json.Unmarshal(raw, &res.Metadata); err != nil {
			return nil, invalid("metadata must be an object of tool_call_id to an object")
		}
	}
	if raw, ok := m["answered_by"]; ok {
		if err := json.Unmarshal(raw, &res.AnsweredBy); err != nil {
			return nil, invalid("answered_by must be an object of tool_call_id to a string")
		}
	}
	if res.Approvals == nil || res.Calls == nil || res.Metadata == nil || res.AnsweredBy == nil {
		// A member given as null: treat as empty.
		full := agentrunner.NewDeferredToolResults()
		full.Merge(res)
		res = full
	}
	if res.Len() == 0 {
		return nil, invalid("the results answer no call: give approvals or calls")
	}
	return res, nil
}
