package approval

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/slackapprove/slackbot/agentrunner"
)

// A coding agent's "always allow" rule (agentrunner.AlwaysAllow) comes in
// with the call it was offered for, in the request's metadata under
// agentrunner.MetaAlwaysAllow, checked when the request opens
// (checkOffered). On a route with offer_always_allow, the card offers
// "Approve and always allow <rule>" (CallView.AlwaysAllow); that
// decision (Decision.AlwaysAllow) is authorized as an approval, by one
// of the route's own approvers, and records in the decision's metadata,
// under the same key, the rule the request offered: the only place a
// rule in the results comes from. The agent adds it to its permissions,
// so later calls it covers never reach slackbot; the audit stream says
// who allowed which rule for whom ("always_allowed").

// EventAlwaysAllowed is the audit stream's event of an approval that gave
// the agent its always-allow rule.
const EventAlwaysAllowed = "always_allowed"

// offeredRule is the always-allow rule offered for call id of r, or nil.
func offeredRule(r *Request, id string) *agentrunner.AlwaysAllow {
	v, ok := r.Requests.Metadata[id][agentrunner.MetaAlwaysAllow]
	if !ok {
		return nil
	}
	a, err := agentrunner.AlwaysAllowFrom(v)
	if err != nil {
		return nil
	}
	return a
}

// checkOffered refuses a request whose metadata offers, for one of its
// approvals, something that is not an always-allow rule (EINVALID): an
// agent's other permission updates (a mode, directories, deny rules) are
// not slackbot's to hand back, and an oversized one no card could show.
func checkOffered(req agentrunner.DeferredToolRequests) error {
	for id, md := range req.Metadata {
		v, ok := md[agentrunner.MetaAlwaysAllow]
		if !ok {
			continue
		}
		if req.Kind(id) != agentrunner.KindApproval {
			return Errorf(EINVALID, "metadata[%q].%s: only an approval can offer an always-allow rule", id, agentrunner.MetaAlwaysAllow)
		}
		if _, err := agentrunner.AlwaysAllowFrom(v); err != nil {
			return Errorf(EINVALID, "metadata[%q].%s: %v", id, agentrunner.MetaAlwaysAllow, err)
		}
	}
	return nil
}

// checkAlwaysAllow refuses an "approve and always allow" the call's route
// does not offer: only a plain approval (no grant, no edited arguments:
// the rule the agent offered is for the call it asked for) of a call
// that offers a rule, on a route with offer_always_allow and one
// required approval.
func (s *Service) checkAlwaysAllow(r *Request, c *Call, d Decision) error {
	route := s.Route(c.Route)
	switch {
	case d.Action != ActionApprove || c.Kind != agentrunner.KindApproval:
		return Errorf(EINVALID, "only an approval can always allow")
	case len(d.OverrideArgs) > 0 || d.Grant != 0:
		return Errorf(EINVALID, "an always-allow rule goes with the call as asked: not with edited arguments, nor with a grant")
	case route == nil || !route.OfferAlwaysAllow || c.Required > 1:
		return Errorf(EINVALID, "The route of this call does not offer the agent's always-allow rule.")
	case offeredRule(r, c.ID) == nil:
		return Errorf(EINVALID, "The agent offered no always-allow rule for this call.")
	}
	return nil
}

// withOfferedRule returns the metadata a person's decision d on call c of
// r records: d's own, with the rule r offered for c under
// agentrunner.MetaAlwaysAllow when d always allows, and never a rule
// from anywhere else.
func withOfferedRule(r *Request, c *Call, d Decision) map[string]any {
	_, given := d.Metadata[agentrunner.MetaAlwaysAllow]
	if !d.AlwaysAllow && !given {
		return d.Metadata
	}
	md := maps.Clone(d.Metadata)
	if md == nil {
		md = map[string]any{}
	}
	delete(md, agentrunner.MetaAlwaysAllow)
	if d.AlwaysAllow {
		md[agentrunner.MetaAlwaysAllow] = r.Requests.Metadata[c.ID][agentrunner.MetaAlwaysAllow]
	}
	if len(md) == 0 {
		return nil
	}
	return md
}

// errClientRule refuses an API client's answer that holds a rule: only
// the Service puts one in the results, the one the request offered.
var errClientRule = errors.New("metadata." + agentrunner.MetaAlwaysAllow + " is slackbot's: it hands back the rule the request offered when a person chooses it")

// alwaysAllowed records in the audit stream that decision d by by on
// call c of r gave the agent its rule: who, which rule, where the agent
// keeps it, and for whom (the requester and what it claims: a coding
// agent's project) and which session.
func (s *Service) alwaysAllowed(ctx context.Context, r *Request, c *Call, d Decision) {
	a := offeredRule(r, c.ID)
	if a == nil {
		return
	}
	detail := fmt.Sprintf("%s allowed %s in %s for %s", d.By, a.Rule(), a.Destination, r.Origin.Requester())
	if claim := r.Origin.Claim(); claim != "" {
		detail += " as " + claim
	}
	if session, _ := r.Requests.Metadata[c.ID][agentrunner.MetaAgentSession].(string); session != "" {
		detail += ", session " + session
	}
	if err := s.store.Note(ctx, r.Token, c.ID, EventAlwaysAllowed, truncate(detail, 4000)); err != nil {
		s.log.ErrorContext(ctx, "audit an always-allow rule", "err", err)
	}
}
