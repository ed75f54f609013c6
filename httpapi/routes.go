package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/slackapprove/slackbot/approval"
)

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

	mux.Handle("GET /v1/openapi.json", handleOpenAPI())
	mux.Handle("POST /v1/approvals", auth(handleCreate(d.approvals, d.store, create)))
	mux.Handle("GET /v1/approvals/{token}", auth(handleGet(d.approvals, d.store, d.events, d.receipts, d.stopping)))
	mux.Handle("POST /v1/approvals/{token}/results", auth(handleResults(d.approvals, d.store, d.receipts)))
	mux.Handle("POST /v1/approvals/{token}/outcomes", auth(handleOutcomes(d.approvals, d.store, d.receipts)))
	mux.Handle("DELETE /v1/approvals/{token}", auth(handleCancel(d.approvals, d.store, d.receipts)))
	mux.Handle("POST /v1/agent-sessions", auth(handleRegisterSession(d.approvals, d.store)))
	mux.Handle("GET /v1/agent-sessions", auth(handleListSessions(d.approvals, d.store, d.events, d.stopping)))
	mux.Handle("POST /v1/agent-sessions/{id}/claim", auth(handleClaimSession(d.approvals, d.store)))
	mux.Handle("POST /v1/agent-sessions/{id}/finish", auth(handleFinishSession(d.store)))

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
