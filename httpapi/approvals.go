package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/store"
)

// Field limits of a create request.
const (
	maxRequester      = 200
	maxContext        = 2000
	maxIdempotencyKey = 200
	maxCallbackURL    = 2048
	maxToolName       = 200
	maxToolCallID     = 512
)

// Statuses of an approval request in the API.
const (
	StatusPending   = "pending"
	StatusResolved  = "resolved"
	StatusExpired   = "expired"
	StatusCancelled = "cancelled"
	StatusFailed    = "failed"
)

// createRequest is the body of POST /v1/approvals: Pydantic AI's
// DeferredToolRequests at the top level, plus slackbot's fields.
type createRequest struct {
	Calls          []agentrunner.ToolCallPart `json:"calls"`
	Approvals      []agentrunner.ToolCallPart `json:"approvals"`
	Metadata       map[string]map[string]any  `json:"metadata"`
	Route          string                     `json:"route"`
	Requester      string                     `json:"requester"`
	Context        string                     `json:"context"`
	Timeout        json.RawMessage            `json:"timeout"`
	CallbackURL    string                     `json:"callback_url"`
	IdempotencyKey string                     `json:"idempotency_key"`
}

var createFields = []string{"calls", "approvals", "metadata", "route", "requester", "context", "timeout", "callback_url", "idempotency_key"}

var resultsFields = []string{"calls", "approvals", "metadata", "answered_by"}

// approvalView is an approval request as the API shows it, in responses
// and callbacks.
type approvalView struct {
	Token     string                           `json:"token"`
	Status    string                           `json:"status"`
	CreatedAt time.Time                        `json:"created_at"`
	ExpiresAt time.Time                        `json:"expires_at"`
	EndedAt   *time.Time                       `json:"ended_at"`
	Requester string                           `json:"requester"`
	Context   string                           `json:"context"`
	Calls     []callView                       `json:"calls"`
	Results   *agentrunner.DeferredToolResults `json:"results"`
}

type callView struct {
	ToolCallID string               `json:"tool_call_id"`
	ToolName   string               `json:"tool_name"`
	Kind       agentrunner.CallKind `json:"kind"`
	State      string               `json:"state"`
	Route      string               `json:"route"`
	DecidedBy  *string              `json:"decided_by"`
	Votes      int                  `json:"votes"`
	Required   int                  `json:"required"`
}

// view maps a request to the API's view of it.
func view(rec *approval.Request) approvalView {
	v := approvalView{
		Token: rec.Token, CreatedAt: rec.CreatedAt.UTC(), ExpiresAt: rec.ExpiresAt.UTC(),
		Requester: rec.Origin.Shown(), Context: rec.Context,
		Calls: make([]callView, 0, len(rec.Calls)), Results: rec.Results,
	}
	switch rec.State {
	case approval.StatePending:
		v.Status = StatusPending
	case approval.StateResolved:
		v.Status = StatusResolved
	case approval.StateExpired:
		v.Status = StatusExpired
	case approval.StateCancelled:
		v.Status = StatusCancelled
	default:
		v.Status = StatusFailed
	}
	if !rec.EndedAt.IsZero() {
		t := rec.EndedAt.UTC()
		v.EndedAt = &t
	}
	for _, c := range rec.Calls {
		cv := callView{
			ToolCallID: c.ID, ToolName: c.Tool, Kind: c.Kind, State: string(c.Status),
			Route: c.Route, Votes: c.QuorumVotes(), Required: c.Required,
		}
		if c.Status != approval.CallPending && !c.Decided() {
			// Calls left undecided take the request's end: expired,
			// cancelled, failed, or resolved (answered without them).
			cv.State = v.Status
		}
		if c.DecidedBy != "" {
			by := c.DecidedBy
			cv.DecidedBy = &by
		}
		v.Calls = append(v.Calls, cv)
	}
	return v
}

// handleCreate serves POST /v1/approvals.
func (a *API) handleCreate(w http.ResponseWriter, r *http.Request, k *Key) error {
	body, err := readJSON(w, r)
	if err != nil {
		return err
	}
	req, err := decodeCreate(body, a.allowPrivateCallbacks)
	if err != nil {
		return err
	}
	timeout, err := parseTimeout(req.Timeout)
	if err != nil {
		return err
	}
	if req.Route != "" && !k.Allows(req.Route) {
		return fmt.Errorf("route %q: %w", req.Route, bot.ErrRouteForbidden)
	}
	if req.CallbackURL != "" && !a.allowPrivateCallbacks {
		u, _ := url.Parse(req.CallbackURL) // parsed by decodeCreate
		if err := checkCallbackHost(r.Context(), a.resolver, u.Hostname()); err != nil {
			return err
		}
	}

	token := agentrunner.NewToken()
	if req.IdempotencyKey != "" {
		sum := sha256.Sum256(body)
		fp := hex.EncodeToString(sum[:16])
		// The claim lasts a minute until the record exists; then it lives
		// as long as the record (KeepIdempotency in create below).
		got, first, err := a.store.ClaimIdempotency(r.Context(), k.Name, req.IdempotencyKey, token, fp, time.Minute)
		if err != nil {
			return err
		}
		if !first {
			return a.replay(w, r, got, fp)
		}
	}
	created := false
	reqs := agentrunner.DeferredToolRequests{Calls: req.Calls, Approvals: req.Approvals, Metadata: req.Metadata}
	// The request is accepted: asking finishes even if the client goes
	// away, so a retry with the idempotency key finds every card posted.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), time.Minute)
	defer cancel()
	_, err = a.bot.AskAPI(ctx, bot.APIRequest{
		Token: token, Requests: reqs, Client: k.Name, Requester: req.Requester, Context: req.Context,
		Route: req.Route, AllowedRoutes: k.Routes, Timeout: timeout,
		Create: func(ctx context.Context, ap *approval.Request) error {
			ap.CallbackURL = req.CallbackURL
			// The quota is taken last before the record, when nothing
			// else can refuse the request.
			if err := a.store.TakeQuota(ctx, k.Name, token, ap.ExpiresAt, a.quota); err != nil {
				return err
			}
			if err := a.store.Create(ctx, ap); err != nil {
				return errors.Join(err, a.store.ReleaseQuota(ctx, k.Name, token))
			}
			created = true
			if req.IdempotencyKey != "" {
				return a.store.KeepIdempotency(ctx, k.Name, req.IdempotencyKey, token)
			}
			return nil
		},
	})
	if err != nil {
		// Clean up on a context of its own: ctx may be what ran out.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
		defer cancel()
		if created {
			if _, ferr := a.store.Fail(ctx, token, "slackbot", "slackbot could not ask for a decision"); ferr != nil && !isEnded(ferr) {
				err = errors.Join(err, fmt.Errorf("end the token: %w", ferr))
			}
		}
		if req.IdempotencyKey != "" {
			if rerr := a.store.ReleaseIdempotency(ctx, k.Name, req.IdempotencyKey, token); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		return err
	}
	rec, err := a.store.Get(ctx, token)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/approvals/"+token)
	writeJSON(w, http.StatusCreated, view(rec))
	return nil
}

// replay answers a create request whose idempotency key was used before:
// the same token and its current status, or a conflict.
func (a *API) replay(w http.ResponseWriter, r *http.Request, got store.Idempotency, fingerprint string) error {
	if got.Fingerprint != fingerprint {
		return conflict("idempotency_key was already used with a different request body")
	}
	rec, err := a.store.Get(r.Context(), got.Token)
	if errors.Is(err, approval.ErrNotFound) {
		return conflict("a request with this idempotency_key is still being created; retry in a moment")
	}
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/approvals/"+got.Token)
	w.Header().Set("Idempotent-Replayed", "true")
	writeJSON(w, http.StatusOK, view(rec))
	return nil
}

// handleGet serves GET /v1/approvals/{token}[?wait=30s].
func (a *API) handleGet(w http.ResponseWriter, r *http.Request, k *Key) error {
	wait, err := parseWait(r.URL.Query())
	if err != nil {
		return err
	}
	rec, err := a.owned(r.Context(), r.PathValue("token"), k)
	if err != nil {
		return err
	}
	if wait > 0 && rec.State == approval.StatePending {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		unwatch := context.AfterFunc(a.stopping, cancel)
		ended, err := a.events.Await(ctx, rec.Token)
		unwatch()
		cancel()
		switch {
		case err == nil:
			rec = ended
		case r.Context().Err() != nil:
			return nil // the client went away
		case ctx.Err() != nil:
			// Still pending: show the current votes.
			if rec, err = a.store.Get(r.Context(), rec.Token); err != nil {
				return err
			}
		default:
			return err
		}
	}
	writeJSON(w, http.StatusOK, view(rec))
	return nil
}

// handleResults serves POST /v1/approvals/{token}/results.
func (a *API) handleResults(w http.ResponseWriter, r *http.Request, k *Key) error {
	body, err := readJSON(w, r)
	if err != nil {
		return err
	}
	results, err := decodeResults(body)
	if err != nil {
		return err
	}
	rec, err := a.owned(r.Context(), r.PathValue("token"), k)
	if err != nil {
		return err
	}
	if rec.State != approval.StatePending {
		return endedErr(rec.State)
	}
	if err := rec.Requests.Check(results); err != nil {
		return invalid("answers must name calls of this request under their kind (approvals answer approvals, calls answer the others): %s",
			strings.TrimPrefix(err.Error(), agentrunner.ErrNotPending.Error()+": "))
	}
	var decided []string
	for _, id := range answeredIDs(results) {
		if c := rec.Call(id); c != nil && c.Status != approval.CallPending {
			decided = append(decided, fmt.Sprintf("%s (%s by %s)", id, c.Status, c.DecidedBy))
		}
	}
	if len(decided) > 0 {
		return conflict("already decided: %s", strings.Join(decided, ", "))
	}
	if err := a.checkOverrides(r.Context(), rec, results); err != nil {
		return err
	}
	// Who answered is the authenticated client; a name the client gives
	// is kept after it, so the audit stream never shows an unverified name
	// alone.
	for id, by := range results.AnsweredBy {
		results.AnsweredBy[id] = k.Name + "/" + by
	}
	for id := range results.AnsweredBy {
		if _, ok := results.Approvals[id]; !ok {
			if _, ok := results.Calls[id]; !ok {
				delete(results.AnsweredBy, id)
			}
		}
	}
	rec, err = a.store.Answer(r.Context(), rec.Token, k.Name, results)
	if err != nil {
		return err
	}
	a.goAsync(r.Context(), "update cards", func(ctx context.Context) error {
		return a.bot.UpdateCards(ctx, rec.Token)
	})
	writeJSON(w, http.StatusOK, view(rec))
	return nil
}

// handleCancel serves DELETE /v1/approvals/{token}.
func (a *API) handleCancel(w http.ResponseWriter, r *http.Request, k *Key) error {
	rec, err := a.owned(r.Context(), r.PathValue("token"), k)
	if err != nil {
		return err
	}
	rec, err = a.store.Cancel(r.Context(), rec.Token, k.Name)
	if err != nil {
		return err
	}
	a.goAsync(r.Context(), "update cards", func(ctx context.Context) error {
		return a.bot.UpdateCards(ctx, rec.Token)
	})
	writeJSON(w, http.StatusOK, view(rec))
	return nil
}

// owned returns the record of token if the client owns it; any other
// token (unknown, malformed, gone, another client's, a Slack run's) is
// not found, so tokens cannot be probed. Ownership is read from the
// record's small owner field before the record is loaded, so that another
// client's token answers as fast as an unknown one, whatever its size.
func (a *API) owned(ctx context.Context, token string, k *Key) (*approval.Request, error) {
	owner, err := a.store.Owner(ctx, token)
	if err != nil {
		return nil, err
	}
	if owner != k.Name {
		return nil, errNotFound
	}
	rec, err := a.store.Get(ctx, token)
	if err != nil {
		return nil, err
	}
	if rec.Origin.Client != k.Name {
		return nil, errNotFound // the token was recreated meanwhile: cannot happen, but never show it
	}
	return rec, nil
}

func endedErr(st approval.State) error {
	switch st {
	case approval.StateResolved:
		return approval.ErrResolved
	case approval.StateExpired:
		return approval.ErrExpired
	case approval.StateCancelled:
		return approval.ErrCancelled
	}
	return approval.ErrFailed
}

// isEnded reports whether err says the request already ended.
func isEnded(err error) bool {
	switch approval.ErrorCode(err) {
	case approval.ERESOLVED, approval.EEXPIRED, approval.ECANCELLED, approval.EFAILED:
		return true
	}
	return false
}

func answeredIDs(r *agentrunner.DeferredToolResults) []string {
	var ids []string
	for id := range r.Approvals {
		ids = append(ids, id)
	}
	for id := range r.Calls {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

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
		if err := agentrunner.CheckArgsDepth(c.Args); err != nil {
			return nil, invalid("%s: args are nested deeper than %d levels", where, agentrunner.MaxArgsDepth)
		}
		if _, err := c.ArgsObject(); err != nil {
			return nil, invalid("%s: args must be a JSON object, a string holding one, or null", where)
		}
	}
	for id := range req.Metadata {
		if !seen[id] {
			return nil, invalid("metadata names %q, which is not a tool_call_id of the request", id)
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
