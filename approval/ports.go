package approval

import (
	"context"

	"github.com/slackapprove/slackbot/agentrunner"
)

// Store keeps requests and records decisions atomically. Package store
// implements it over Redis. Every method returns an *Error (wrapped, with
// the token in the message) for the conditions its doc names, and other
// errors when the store cannot be reached.
type Store interface {
	// Create records a new request with every call pending; create it
	// before any card shows its token, so that no click can arrive first.
	// On success r.CreatedAt, r.ExpiresAt, r.State and r.Calls are filled
	// in. It returns EINVALID for a malformed request, ECONFLICT if the
	// token exists, and the request's end (ERESOLVED, EEXPIRED,
	// ECANCELLED, EFAILED) if it was opened and has ended since.
	Create(ctx context.Context, r *Request) error
	// Get returns the request, or ENOTFOUND.
	Get(ctx context.Context, token string) (*Request, error)
	// SetMessage records where a call's card was posted. It returns
	// ENOTFOUND for an unknown token or call.
	SetMessage(ctx context.Context, token, callID string, ref MessageRef) error
	// Decide records one decision atomically: the first valid decision
	// wins; an approval is one vote and the call is approved once Required
	// distinct approvers approved the same arguments; a denial denies at
	// once; a repeat changes nothing (Changed false, nil error). The
	// decision that decides the last pending call resolves the request,
	// exactly once. It returns EINVALID for a malformed decision,
	// ENOTFOUND for an unknown token or call, EEXPIRED past the deadline,
	// ECANCELLED, EFAILED or ERESOLVED after the request ended, EDECIDED
	// (with the Decided describing the decision already made) if the call
	// was decided differently, and ETOOLATE past d.NotAfter. Under
	// REDIS_WAIT_REPLICAS it returns EUNCONFIRMED for a decision held,
	// with no effect, until Redis's replicas confirm it (Confirmer), and
	// ERECORDING while another change of the request is held so; Answer,
	// Cancel and Fail do too.
	Decide(ctx context.Context, token string, d Decision) (*Decided, error)
	// Answer records answers to some or all pending calls at once, as the
	// HTTP API's results do, and resolves the request when none is left
	// pending. results.AnsweredBy names who answered each call, by
	// otherwise. It returns EINVALID for empty results, ENOTFOUND (naming
	// the ids) if an answer names a call that is not pending, and the
	// request's end if it ended. Nothing changes on error.
	Answer(ctx context.Context, token, by string, results *agentrunner.DeferredToolResults) (*Request, error)
	// Cancel ends a pending request with no decision; Fail ends it as
	// failed with reason. Both return ENOTFOUND or the request's end.
	Cancel(ctx context.Context, token, by string) (*Request, error)
	Fail(ctx context.Context, token, by, reason string) (*Request, error)
	// SetOutcome records what a decided call's tool did, on the call and
	// in the audit stream.
	SetOutcome(ctx context.Context, token, callID string, o Outcome) error
	// ReportOutcome records what became of an approved call as by (an API
	// client) reports it, once, on the call and in the audit stream: it
	// returns the outcome the call holds and whether this report recorded
	// it (false: an earlier report had, and nothing changed). It returns
	// ENOTFOUND for an unknown token or call and ECONFLICT for a call that
	// is not approved.
	ReportOutcome(ctx context.Context, token, callID, by string, o Outcome) (Outcome, bool, error)
	// Refused records a refused attempt to decide in the audit stream:
	// code is the Error code, reason what the person was told.
	Refused(ctx context.Context, token, callID, by, code, reason string) error
	// Note records an event about a call in the audit stream: "reminded"
	// (detail: which reminder), "escalated" (detail: the channel the card
	// was linked in), "escalation_decided" (detail: the action).
	Note(ctx context.Context, token, callID, event, detail string) error
	// LockCard takes the lease of one call's card for holder (a random
	// name), waiting while another live process holds it, and returns the
	// request as it stands under the lease, so that one card is
	// re-rendered by one process at a time and the last to render read
	// last. The lease is held until ReleaseCard, a bound, or its process's
	// death. It returns ENOTFOUND, holding nothing, if the token is gone.
	LockCard(ctx context.Context, token, callID, holder string) (*Request, error)
	// ReleaseCard frees the card's lease if holder (empty: none) holds it
	// and drops the durable card update job (empty: none) scheduled with
	// a decision on callID (Decision.CardJob), in one step.
	ReleaseCard(ctx context.Context, token, callID, holder, job string) error
	// Sweep expires every pending request past its deadline, each once
	// across all processes, with its card update queued durably in the
	// same step, and returns the requests it expired.
	Sweep(ctx context.Context) ([]*Request, error)
	// AuditPolicy records in the audit stream a decision a policy made on
	// a run's call before any request held it.
	AuditPolicy(ctx context.Context, d PolicyDecision) error
	// ScheduleCards schedules, under the name job, the durable update of
	// every card of a request, due after a delay, for a change of the
	// whole request the caller makes next; ReleaseCard with callID empty
	// drops it.
	ScheduleCards(ctx context.Context, token, job string) error
	// StepUpStore keeps the single-use step-up links.
	StepUpStore
}

// Directory answers who is in a usergroup. Package bot implements it over
// Slack's usergroups.users.list, with a cache.
type Directory interface {
	// Members returns the user ids of usergroup. An error means the
	// membership could not be learnt (not that the user is absent).
	Members(ctx context.Context, usergroup string) ([]string, error)
	// Warm looks the members of usergroups up in the background, so that
	// the first click on a card just posted need not wait for a lookup.
	Warm(usergroups ...string)
}
