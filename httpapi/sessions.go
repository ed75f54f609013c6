package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/client"
)

// This file serves the registry of deferred coding-agent sessions
// (/v1/agent-sessions): a client's bookkeeping beside its requests, kept
// by Sessions, never a write of a request. Only the key that registered a
// session reads, claims or finishes it; a session of another key is "not
// found", as another key's token is. See docs/ARCHITECTURE.md, "Deferred
// coding-agent sessions".

// Sessions keeps the clients' deferred coding-agent sessions;
// *store.Store implements it. Its errors are approval's codes: ENOTFOUND
// (also for another client's session), ECONFLICT (claimed, or resumed
// already), ERATELIMITED (too many sessions for one resumer).
type Sessions interface {
	// LookupIdempotency returns the request client's idempotency key
	// stands for, or ENOTFOUND.
	LookupIdempotency(ctx context.Context, client, key string) (approval.Idempotency, error)
	// RegisterSession records a session for as long as its request's
	// record lives; registering it again finds the same one.
	RegisterSession(ctx context.Context, s *approval.AgentSession) (*approval.AgentSession, error)
	// Sessions lists client's sessions registered for resumer.
	Sessions(ctx context.Context, client, resumer string) ([]*approval.AgentSession, error)
	// ClaimSession gives a session to its resumer for lease, once.
	ClaimSession(ctx context.Context, client, resumer, id string, lease time.Duration) (*approval.AgentSession, error)
	// FinishSession records how the resume under claim attempt ended.
	FinishSession(ctx context.Context, client, id string, attempt int, outcome string) (*approval.AgentSession, error)
}

// Limits of the session endpoints.
const (
	// maxCallID bounds a registration's call_id, as the create does
	// tool_call_id.
	maxCallID = 200
	// maxOutcome bounds a finish's outcome.
	maxOutcome = 1000
	// defaultLease and maxLease bound a claim: the time a resumer has to
	// resume before another may claim the session again.
	defaultLease = 15 * time.Minute
	maxLease     = 24 * time.Hour
	// maxAwaited bounds the requests one long poll of the list waits on.
	maxAwaited = 100
)

// sessionView is a session as the API shows it (client.Session).
type sessionView struct {
	ID            string     `json:"id"`
	Resumer       string     `json:"resumer"`
	Agent         string     `json:"agent"`
	Token         string     `json:"token"`
	CallID        string     `json:"call_id"`
	SessionID     string     `json:"session_id"`
	Cwd           string     `json:"cwd"`
	Args          []string   `json:"args"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	LeaseUntil    *time.Time `json:"lease_until,omitempty"`
	Outcome       string     `json:"outcome,omitempty"`
	RequestStatus string     `json:"request_status"`
}

func viewSession(s *approval.AgentSession, status string) sessionView {
	v := sessionView{ID: s.ID, Resumer: s.Resumer, Agent: s.Agent, Token: s.Token, CallID: s.CallID,
		SessionID: s.SessionID, Cwd: s.Cwd, Args: s.Args, State: s.State, Attempts: s.Attempts,
		Outcome: s.Outcome, RequestStatus: status}
	if s.State == approval.SessionClaimed {
		t := s.LeaseUntil.UTC()
		v.LeaseUntil = &t
	}
	if v.Args == nil {
		v.Args = []string{}
	}
	return v
}

// decodeStrict decodes body into v, refusing unknown fields.
func decodeStrict(body []byte, v any, known ...string) error {
	m, err := decodeObject(body, known)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(m)
	if err := json.Unmarshal(b, v); err != nil {
		return invalid("the body does not fit: %s", jsonProblem(err))
	}
	return nil
}

// sessionError maps what approval's codes cannot say of a session.
func sessionError(err error) error {
	if approval.ErrorCode(err) == approval.ERATELIMITED {
		return &Error{Status: http.StatusTooManyRequests, Code: CodeRateLimited, Message: approval.ErrorMessage(err)}
	}
	return err
}

// handleRegisterSession serves POST /v1/agent-sessions: the session must
// pass client.CheckSession (what a resumer will run), and name a request
// the key opened under the idempotency key, with the call.
func handleRegisterSession(approvals Approvals, sessions Sessions) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, k *Key) error {
		body, err := readJSON(w, r)
		if err != nil {
			return err
		}
		var reg client.SessionRegistration
		if err := decodeStrict(body, &reg, "agent", "idempotency_key", "call_id", "session_id", "cwd", "args", "resumer"); err != nil {
			return err
		}
		switch {
		case reg.IdempotencyKey == "" || len(reg.IdempotencyKey) > maxIdempotencyKey:
			return invalid("idempotency_key: want the key the request was opened with (1 to %d characters)", maxIdempotencyKey)
		case reg.CallID == "" || len(reg.CallID) > maxCallID:
			return invalid("call_id: want the deferred call's id (1 to %d characters)", maxCallID)
		}
		if err := client.CheckSession(reg.Agent, reg.SessionID, reg.Cwd, reg.Resumer, reg.Args); err != nil {
			return invalid("%v", err)
		}
		idem, err := sessions.LookupIdempotency(r.Context(), k.Name, reg.IdempotencyKey)
		if err != nil {
			return err
		}
		rec, err := approvals.Get(r.Context(), idem.Token)
		if err != nil {
			return err
		}
		if rec.Origin.Client != k.Name {
			return errNotFound
		}
		if rec.Call(reg.CallID) == nil {
			return invalid("call_id %q is not a call of the request opened under this idempotency key", reg.CallID)
		}
		s, err := sessions.RegisterSession(r.Context(), &approval.AgentSession{Client: k.Name, Resumer: reg.Resumer,
			Agent: reg.Agent, Token: rec.Token, CallID: reg.CallID, SessionID: reg.SessionID, Cwd: reg.Cwd, Args: reg.Args})
		if err != nil {
			return sessionError(err)
		}
		writeJSON(w, http.StatusCreated, viewSession(s, statusOf(rec)))
		return nil
	}
}

// handleListSessions serves GET /v1/agent-sessions?resumer=R[&wait=30s]:
// the key's sessions for R that a resumer can take now (claimable, their
// request ended). A long poll waits, on the requests still pending, until
// one ends, the wait is over or the server stops.
func handleListSessions(approvals Approvals, sessions Sessions, events Waiter, stopping <-chan struct{}) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, k *Key) error {
		resumer := r.URL.Query().Get("resumer")
		if err := client.CheckResumer(resumer); err != nil {
			return invalid("%v", err)
		}
		wait, err := parseWait(r.URL.Query())
		if err != nil {
			return err
		}
		ready, pending, err := readySessions(r.Context(), approvals, sessions, k.Name, resumer)
		if err != nil {
			return err
		}
		if len(ready) == 0 && len(pending) > 0 && wait > 0 {
			if awaitAny(r.Context(), events, pending, wait, stopping) {
				if ready, _, err = readySessions(r.Context(), approvals, sessions, k.Name, resumer); err != nil {
					return err
				}
			}
		}
		if r.Context().Err() != nil {
			return nil // the client went away
		}
		writeJSON(w, http.StatusOK, map[string]any{"sessions": ready})
		return nil
	}
}

// readySessions returns client's claimable sessions for resumer whose
// request ended, and the tokens of those whose request is pending.
func readySessions(ctx context.Context, approvals Approvals, sessions Sessions, clientName, resumer string) (ready []sessionView, pending []string, err error) {
	all, err := sessions.Sessions(ctx, clientName, resumer)
	if err != nil {
		return nil, nil, err
	}
	ready = []sessionView{}
	now := time.Now()
	for _, s := range all {
		if !s.Claimable(now) {
			continue
		}
		rec, err := approvals.Get(ctx, s.Token)
		if approval.ErrorCode(err) == approval.ENOTFOUND {
			continue // the request is gone; so will the session be
		}
		if err != nil {
			return nil, nil, err
		}
		if rec.State == approval.StatePending {
			pending = append(pending, s.Token)
			continue
		}
		ready = append(ready, viewSession(s, statusOf(rec)))
	}
	return ready, pending, nil
}

// awaitAny waits until one of tokens' requests ends (true), or wait
// passes, ctx ends or stopping closes (false). It waits on at most
// maxAwaited of them: the next poll sees the others.
func awaitAny(parent context.Context, events Waiter, tokens []string, wait time.Duration, stopping <-chan struct{}) bool {
	ctx, cancel := context.WithTimeout(parent, wait)
	defer cancel()
	ended := make(chan struct{}, 1)
	for _, tok := range tokens[:min(len(tokens), maxAwaited)] {
		go func() {
			if _, err := events.Await(ctx, tok); err == nil {
				select {
				case ended <- struct{}{}:
				default:
				}
			}
		}()
	}
	select {
	case <-ended:
		return true
	case <-ctx.Done():
	case <-stopping:
	}
	return false
}

// handleClaimSession serves POST /v1/agent-sessions/{id}/claim
// {"resumer", "lease_seconds"}: the session, claimed, with its request's
// status; 409 when another resumer holds it or it was resumed already.
func handleClaimSession(approvals Approvals, sessions Sessions) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, k *Key) error {
		body, err := readJSON(w, r)
		if err != nil {
			return err
		}
		var req struct {
			Resumer      string `json:"resumer"`
			LeaseSeconds int    `json:"lease_seconds"`
		}
		if err := decodeStrict(body, &req, "resumer", "lease_seconds"); err != nil {
			return err
		}
		lease := time.Duration(req.LeaseSeconds) * time.Second
		if req.LeaseSeconds == 0 {
			lease = defaultLease
		}
		if lease < time.Second || lease > maxLease {
			return invalid("lease_seconds: want 1 to %d", int(maxLease.Seconds()))
		}
		s, err := sessions.ClaimSession(r.Context(), k.Name, req.Resumer, r.PathValue("id"), lease)
		if err != nil {
			return err
		}
		status := StatusFailed
		if rec, err := approvals.Get(r.Context(), s.Token); err == nil {
			status = statusOf(rec)
		}
		writeJSON(w, http.StatusOK, viewSession(s, status))
		return nil
	}
}

// handleFinishSession serves POST /v1/agent-sessions/{id}/finish
// {"attempt", "outcome"}: only the claim numbered attempt may finish.
func handleFinishSession(sessions Sessions) authedHandler {
	return func(w http.ResponseWriter, r *http.Request, k *Key) error {
		body, err := readJSON(w, r)
		if err != nil {
			return err
		}
		var req struct {
			Attempt int    `json:"attempt"`
			Outcome string `json:"outcome"`
		}
		if err := decodeStrict(body, &req, "attempt", "outcome"); err != nil {
			return err
		}
		if req.Attempt < 1 || len(req.Outcome) > maxOutcome {
			return invalid("want the claim's attempt (from the claim) and an outcome of at most %d bytes", maxOutcome)
		}
		s, err := sessions.FinishSession(r.Context(), k.Name, r.PathValue("id"), req.Attempt, req.Outcome)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, viewSession(s, ""))
		return nil
	}
}
