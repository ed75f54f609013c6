package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
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
	// ByClient: the request's own API key decided the call, not a
	// person, a policy, a grant or slackbot; the doors of coding agents
	// run no approval it made.
	ByClient bool `json:"by_client"`
	// Outcome is what became of the call once decided, when reported.
	Outcome *approval.Outcome `json:"outcome"`
}

// statusOf is the status the API reports for rec.
func statusOf(rec *approval.Request) string {
	switch rec.State {
	case approval.StatePending:
		return StatusPending
	case approval.StateResolved:
		return StatusResolved
	case approval.StateExpired:
		return StatusExpired
	case approval.StateCancelled:
		return StatusCancelled
	}
	return StatusFailed
}

// view maps a request to the API's view of it; its results are handed
// out here (approval.Request.Results), with receipts signed by receipts.
func view(rec *approval.Request, receipts approval.Signer) approvalView {
	v := approvalView{
		Token: rec.Token, CreatedAt: rec.CreatedAt.UTC(), ExpiresAt: rec.ExpiresAt.UTC(),
		Requester: rec.Origin.Shown(), Context: rec.Context,
		Calls: make([]callView, 0, len(rec.Calls)), Results: rec.Results(receipts),
	}
	v.Status = statusOf(rec)
	if !rec.EndedAt.IsZero() {
		t := rec.EndedAt.UTC()
		v.EndedAt = &t
	}
	for _, c := range rec.Calls {
		cv := callView{
			ToolCallID: c.ID, ToolName: c.Tool, Kind: c.Kind, State: string(c.Status),
			Route: c.Route, ByClient: c.ByClient, Votes: c.QuorumVotes(), Required: c.Required, Outcome: c.Outcome,
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

// createOptions are how requests are admitted.
type createOptions struct {
	allowPrivateCallbacks bool
	resolver              Resolver
	quota                 approval.Quota
	receipts              approval.Signer
}

// handleCreate serves POST /v1/approvals: the request is checked, its
// idempotency key claimed, and then opened through the one pipeline
// (approvals.Open), which the client's quota admits just before the
// request is recorded.
func handleCreate(approvals Approvals, st Store, opts createOptions) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, k *Key) error {
		body, err := readJSON(w, r)
		if err != nil {
			return err
		}
		req, err := decodeCreate(body, opts.allowPrivateCallbacks)
		if err != nil {
			return err
		}
		timeout, err := parseTimeout(req.Timeout)
		if err != nil {
			return err
		}
		if req.Route != "" && !k.Allows(req.Route) {
			return approval.Errorf(approval.EFORBIDDEN, "route %q: not allowed for this API client", req.Route)
		}
		if req.CallbackURL != "" && !opts.allowPrivateCallbacks {
			u, _ := url.Parse(req.CallbackURL) // parsed by decodeCreate
			if err := checkCallbackHost(r.Context(), opts.resolver, u.Hostname()); err != nil {
				return err
			}
		}
		token := agentrunner.NewToken()
		if req.IdempotencyKey != "" {
			sum := sha256.Sum256(body)
			fp := hex.EncodeToString(sum[:16])
			// The claim lasts a minute until the record exists; then it
			// lives as long as the record (KeepIdempotency in open).
			got, first, err := st.ClaimIdempotency(r.Context(), k.Name, req.IdempotencyKey, token, fp, time.Minute)
			if err != nil {
				return err
			}
			if !first {
				return replay(w, r, approvals, opts.receipts, got, fp)
			}
		}
		if err := open(r.Context(), approvals, st, opts.quota, k, token, req, timeout); err != nil {
			return err
		}
		rec, err := approvals.Get(r.Context(), token)
		if err != nil {
			return err
		}
		w.Header().Set("Location", "/v1/approvals/"+token)
		writeJSON(w, http.StatusCreated, view(rec, opts.receipts))
		return nil
	}
}

// open opens the request of a create call under token, counted against
// the client's quota, its idempotency key kept as long as the record
// (approval.OpenForClient, which also undoes what a failure left).
func open(ctx context.Context, approvals Approvals, st Store, q approval.Quota, k *Key, token string, req *createRequest, timeout time.Duration) error {
	return approval.OpenForClient(ctx, approvals, st, q, approval.Opening{
		Token:    token,
		Requests: agentrunner.DeferredToolRequests{Calls: req.Calls, Approvals: req.Approvals, Metadata: req.Metadata},
		Origin:   approval.Origin{Client: k.Name, Name: req.Requester}, Context: req.Context, CallbackURL: req.CallbackURL,
		Route: req.Route, AllowedRoutes: k.Routes, Timeout: timeout,
	}, req.IdempotencyKey)
}

// replay answers a create request whose idempotency key was used before:
// the same token and its current status, or a conflict.
func replay(w http.ResponseWriter, r *http.Request, approvals Approvals, receipts approval.Signer, got approval.Idempotency, fingerprint string) error {
	if got.Fingerprint != fingerprint {
		return conflict("idempotency_key was already used with a different request body")
	}
	rec, err := approvals.Get(r.Context(), got.Token)
	if errors.Is(err, approval.ErrNotFound) {
		return conflict("a request with this idempotency_key is still being created; retry in a moment")
	}
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/approvals/"+got.Token)
	w.Header().Set("Idempotent-Replayed", "true")
	writeJSON(w, http.StatusOK, view(rec, receipts))
	return nil
}

// await waits up to wait for token to end, or until stopping is closed.
// waited reports that the wait ended that way (the request still pending),
// not by an error of the Waiter.
func await(parent context.Context, events Waiter, token string, wait time.Duration, stopping <-chan struct{}) (ended *approval.Request, waited bool, err error) {
	ctx, cancel := context.WithTimeout(parent, wait)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-stopping:
			cancel()
		case <-done:
		}
	}()
	ended, err = events.Await(ctx, token)
	return ended, ctx.Err() != nil, err
}

// handleGet serves GET /v1/approvals/{token}[?wait=30s]. A long poll
// blocks in events.Await until the request ends, the wait is over, or
// stopping is closed (the server shuts down).
func handleGet(approvals Approvals, owners Owners, events Waiter, receipts approval.Signer, stopping <-chan struct{}) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, k *Key) error {
		wait, err := parseWait(r.URL.Query())
		if err != nil {
			return err
		}
		rec, err := owned(r.Context(), approvals, owners, r.PathValue("token"), k)
		if err != nil {
			return err
		}
		if wait > 0 && rec.State == approval.StatePending {
			ended, waited, err := await(r.Context(), events, rec.Token, wait, stopping)
			switch {
			case err == nil:
				rec = ended
			case r.Context().Err() != nil:
				return nil // the client went away
			case waited:
				// Still pending: show the current votes.
				if rec, err = approvals.Get(r.Context(), rec.Token); err != nil {
					return err
				}
			default:
				return err
			}
		}
		writeJSON(w, http.StatusOK, view(rec, receipts))
		return nil
	}
}

// handleResults serves POST /v1/approvals/{token}/results: the answers
// are the client's decisions, made through approvals.Decide like every
// other decision (it checks kinds, calls already decided and edited
// arguments, and records them at once).
func handleResults(approvals Approvals, owners Owners, receipts approval.Signer) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, k *Key) error {
		body, err := readJSON(w, r)
		if err != nil {
			return err
		}
		results, err := decodeResults(body)
		if err != nil {
			return err
		}
		token := r.PathValue("token")
		if err := own(r.Context(), owners, token, k); err != nil {
			return err
		}
		if err := checkNames(r.Context(), approvals, token, results); err != nil {
			return err
		}
		d, err := approvals.Answer(r.Context(), token, approval.Decider{Client: k.Name}, results)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, view(d.Request, receipts))
		return nil
	}
}

// checkNames refuses results whose metadata or answered_by name a call
// the request does not have, as every answer must. Decide checks the
// answers themselves; only results that name calls they do not answer
// cost this extra read.
func checkNames(ctx context.Context, approvals Approvals, token string, results *agentrunner.DeferredToolResults) error {
	extra := false
	for id := range results.Metadata {
		_, a := results.Approvals[id]
		_, c := results.Calls[id]
		extra = extra || !(a || c)
	}
	for id := range results.AnsweredBy {
		_, a := results.Approvals[id]
		_, c := results.Calls[id]
		extra = extra || !(a || c)
	}
	if !extra {
		return nil
	}
	rec, err := approvals.Get(ctx, token)
	if err != nil || rec.State != approval.StatePending {
		return nil // Decide tells
	}
	if err := rec.Requests.Check(results); err != nil {
		return invalid("answers must name calls of this request under their kind (approvals answer approvals, calls answer the others): %s",
			strings.TrimPrefix(err.Error(), agentrunner.ErrNotPending.Error()+": "))
	}
	return nil
}

// handleCancel serves DELETE /v1/approvals/{token}.
func handleCancel(approvals Approvals, owners Owners, receipts approval.Signer) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, k *Key) error {
		token := r.PathValue("token")
		if err := own(r.Context(), owners, token, k); err != nil {
			return err
		}
		rec, err := approvals.Cancel(r.Context(), token, approval.Decider{Client: k.Name})
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, view(rec, receipts))
		return nil
	}
}

// own returns nil if client k owns token; any other token (unknown,
// malformed, gone, another client's, a Slack run's) is not found, so
// tokens cannot be probed. Ownership is read from the record's small
// owner field before the record is loaded, so that another client's token
// answers as fast as an unknown one, whatever its size.
func own(ctx context.Context, owners Owners, token string, k *Key) error {
	owner, err := owners.Owner(ctx, token)
	if err != nil {
		return err
	}
	if owner != k.Name {
		return errNotFound
	}
	return nil
}

// owned returns the record of token if client k owns it (see own).
func owned(ctx context.Context, approvals Approvals, owners Owners, token string, k *Key) (*approval.Request, error) {
	if err := own(ctx, owners, token, k); err != nil {
		return nil, err
	}
	rec, err := approvals.Get(ctx, token)
	if err != nil {
		return nil, err
	}
	if rec.Origin.Client != k.Name {
		return nil, errNotFound // the token was recreated meanwhile: cannot happen, but never show it
	}
	return rec, nil
}
