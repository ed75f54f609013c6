package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/slackapprove/slackbot/approval"
)

// refusalCodes are the codes of Authorize's refusals.
var refusalCodes = []string{approval.EWRONGTEAM, approval.EWRONGMESSAGE, approval.ENOROUTE, approval.ENOTAPPROVER, approval.ESELFAPPROVAL}

// asRefusal returns the refusal err is (an *approval.Error with one of
// Authorize's refusal codes), if it is one.
func asRefusal(err error) (*approval.Error, bool) {
	var e *approval.Error
	if errors.As(err, &e) && slices.Contains(refusalCodes, e.Code) {
		return e, true
	}
	return nil, false
}

// refusal is Authorize's refusal: code says why, message is shown to the
// person (ephemerally) and recorded in the audit stream.
func refusal(code, message string) *approval.Error {
	return &approval.Error{Code: code, Message: message}
}

// Authorizer decides whether a Slack user may decide a call. It resolves
// usergroup members with usergroups.users.list (Tier 2: about 20 calls a
// minute) through a cache; see usergroups.go.
type Authorizer struct {
	// TeamID is this workspace's team id; payloads from any other are
	// refused. Empty accepts any team (Enterprise Grid org-wide apps).
	TeamID string
	// EnterpriseID, on Enterprise Grid, is the organization's id: clicks
	// from other workspaces of the same organization are accepted.
	EnterpriseID string
	Slack        SlackAPI
	// TTL is how long usergroup members are fresh; default 1 minute.
	TTL time.Duration
	// MaxStale is how long after TTL stale members are still served, at
	// once, while they are looked up again in the background; default 10
	// minutes. Past it a click waits for the lookup.
	MaxStale time.Duration
	Now      func() time.Time
	// Sleep waits for d or until ctx ends (Retry-After); nil means a real
	// timer. Tests inject it.
	Sleep func(ctx context.Context, d time.Duration) error

	mu      sync.Mutex
	groups  map[string]groupEntry
	limited time.Time // usergroups.users.list is rate limited until then
	flight  singleflight.Group
	wg      sync.WaitGroup // lookups in flight
}

// Click is a person's attempt to decide a call.
type Click struct {
	TeamID string
	// EnterpriseID is the click's Enterprise Grid organization, if any.
	EnterpriseID string
	User         string
	// Message is the message the button was on (or the message a modal was
	// opened from); it must be the call's card.
	Message approval.MessageRef
	Action  approval.Action
}

// Authorize returns nil if click may decide call under route, or an
// *approval.Error coded EWRONGTEAM, EWRONGMESSAGE, ENOROUTE, ENOTAPPROVER
// or ESELFAPPROVAL whose Message says why not and who can decide. requester is who asked
// for the call.
func (a *Authorizer) Authorize(ctx context.Context, click Click, call *approval.Call, route *Route, requester string) error {
	if ws := (Workspace{TeamID: a.TeamID, EnterpriseID: a.EnterpriseID}); a.TeamID != "" && !ws.is(click.TeamID, click.EnterpriseID) {
		return refusal(approval.EWRONGTEAM, "This button comes from another Slack workspace.")
	}
	if call.Message.Channel != "" && (click.Message.Channel != call.Message.Channel || click.Message.TS != call.Message.TS) {
		return refusal(approval.EWRONGMESSAGE, "This button does not belong to the message of this request.")
	}
	if route == nil {
		return refusal(approval.ENOROUTE, fmt.Sprintf("The route %q that this request was sent through no longer exists, so nobody can decide it here.", call.Route))
	}
	ok, err := route.IsApprover(ctx, click.User, a.members)
	if err != nil {
		return fmt.Errorf("authorize %s: %w", click.User, err)
	}
	if !ok {
		return refusal(approval.ENOTAPPROVER, fmt.Sprintf("You are not an approver for %s requests. %s", route.Name, WhoCanDecide(route)))
	}
	if click.Action != approval.ActionDeny && click.User == requester && !route.AllowSelfApproval {
		return refusal(approval.ESELFAPPROVAL, "You asked for this call, so someone else must approve it. "+WhoCanDecide(route))
	}
	return nil
}

// WhoCanDecide names a route's approvers for a refusal message. It mentions
// users and usergroups by name without notifying them (Slack does not
// notify for mentions in ephemeral messages).
func WhoCanDecide(route *Route) string {
	var who []string
	for _, u := range route.Users {
		who = append(who, "<@"+u+">")
	}
	for _, g := range route.Usergroups {
		who = append(who, "<!subteam^"+g+">")
	}
	if len(who) == 0 {
		return "Nobody is listed as an approver."
	}
	return "Approvers: " + strings.Join(who, ", ") + "."
}
