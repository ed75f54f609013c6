package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/slackapprove/slackbot/approval"
)

// The API's operations: the route patterns its handler serves, which
// metrics and logs name a request by (never its path, which carries a
// resume token).
const (
	OpOpenAPI         = "GET /v1/openapi.json"
	OpCreate          = "POST /v1/approvals"
	OpGet             = "GET /v1/approvals/{token}"
	OpResults         = "POST /v1/approvals/{token}/results"
	OpOutcomes        = "POST /v1/approvals/{token}/outcomes"
	OpCancel          = "DELETE /v1/approvals/{token}"
	OpRegisterSession = "POST /v1/agent-sessions"
	OpListSessions    = "GET /v1/agent-sessions"
	OpClaimSession    = "POST /v1/agent-sessions/{id}/claim"
	OpFinishSession   = "POST /v1/agent-sessions/{id}/finish"
)

// Operations lists every operation above, for metrics that start a series
// at zero for each. A request that matches none (an unknown path, a
// method a path does not allow) has another pattern: see OperationOf.
var Operations = []string{OpOpenAPI, OpCreate, OpGet, OpResults, OpOutcomes, OpCancel, OpRegisterSession, OpListSessions, OpClaimSession, OpFinishSession}

// OpOther names every request that is none of Operations.
const OpOther = "other"

// OperationOf is the operation of a request the API has served (the
// pattern its mux recorded in r.Pattern), or OpOther: bounded, so it
// can label a metric.
func OperationOf(r *http.Request) string {
	if slices.Contains(Operations, r.Pattern) {
		return r.Pattern
	}
	return OpOther
}

// deps is everything the handlers are built from; each handler takes the
// part it needs.
type deps struct {
	keys      keyring
	approvals Approvals
	store     Store
	events    Waiter
	log       *slog.Logger
	// receipts signs the receipts of the results the API hands out.
	receipts approval.Signer

	allowPrivateCallbacks bool
	resolver              Resolver
	quota                 approval.Quota
	// stopping is closed when the server shuts down: long polls answer
	// then.
	stopping <-chan struct{}
}

// newServer returns the API's handler: every /v1 route, in one place.
func newServer(d deps) http.Handler {
	mux := http.NewServeMux()
	auth := func(h authedHandler) http.Handler { return authed(d.keys, d.log, h) }
	create := createOptions{allowPrivateCallbacks: d.allowPrivateCallbacks, resolver: d.resolver, quota: d.quota, receipts: d.receipts}

	mux.Handle(OpOpenAPI, handleOpenAPI())
	mux.Handle(OpCreate, auth(handleCreate(d.approvals, d.store, create)))
	mux.Handle(OpGet, auth(handleGet(d.approvals, d.store, d.events, d.receipts, d.stopping)))
	mux.Handle(OpResults, auth(handleResults(d.approvals, d.store, d.receipts)))
	mux.Handle(OpOutcomes, auth(handleOutcomes(d.approvals, d.store, d.receipts)))
	mux.Handle(OpCancel, auth(handleCancel(d.approvals, d.store, d.receipts)))
	mux.Handle(OpRegisterSession, auth(handleRegisterSession(d.approvals, d.store)))
	mux.Handle(OpListSessions, auth(handleListSessions(d.approvals, d.store, d.events, d.stopping)))
	mux.Handle(OpClaimSession, auth(handleClaimSession(d.approvals, d.store)))
	mux.Handle(OpFinishSession, auth(handleFinishSession(d.store)))

	// Everything else under /v1/ answers in JSON too.
	for path, allow := range map[string]string{
		"/v1/approvals":                  "POST",
		"/v1/approvals/{token}":          "GET, DELETE",
		"/v1/approvals/{token}/results":  "POST",
		"/v1/approvals/{token}/outcomes": "POST",
		"/v1/openapi.json":               "GET",
		"/v1/agent-sessions":             "GET, POST",
		"/v1/agent-sessions/{id}/claim":  "POST",
		"/v1/agent-sessions/{id}/finish": "POST",
	} {
		mux.Handle(path, methodNotAllowed(d.log, allow))
	}
	mux.Handle("/v1/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, d.log, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such endpoint; see /v1/openapi.json"})
	}))
	return mux
}

// authedHandler serves a request whose bearer key is k; an error it
// returns becomes the error response (errors.go).
type authedHandler func(w http.ResponseWriter, r *http.Request, k *Key) error

// authed authenticates the bearer key before h runs.
func authed(keys keyring, log *slog.Logger, h authedHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, ok := keys.authenticate(r)
		if !ok {
			writeError(w, r, log, errUnauthorized)
			return
		}
		if err := h(w, r, k); err != nil {
			writeError(w, r, log, err)
		}
	})
}

func methodNotAllowed(log *slog.Logger, allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, r, log, &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
			Message: fmt.Sprintf("%s is not allowed here; use %s", r.Method, allow)})
	})
}
