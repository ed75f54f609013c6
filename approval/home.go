package approval

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
)

// App Home: each person's list of what waits for them, what they asked
// for and what they granted, read from the store and authorized as a click
// is; and the republishing of the Homes a change concerns.

// Bounds of a Home.
const (
	// MaxHomeCalls is how many calls each list of a Home shows; the rest
	// are counted ("and N more").
	MaxHomeCalls = 20
	// MaxHomeScan is how many pending requests a Home reads at most.
	MaxHomeScan = 500
	// MaxHomeScanPerRequester is how many of them one requester (a Slack
	// user, or an API key) may be: a flood of one client's requests leaves
	// room for everyone else's.
	MaxHomeScanPerRequester = 50
	// MaxHomeRefresh is how many Homes one change republishes at most.
	MaxHomeRefresh = 50
	// HomeViewerTTL is how long a person who opened their Home counts as
	// watching it: their Home is republished when a change concerns them.
	HomeViewerTTL = 24 * time.Hour
	// HomeCoalesce is how long the changes that concern one Home are
	// gathered into one publish.
	HomeCoalesce = 2 * time.Second
)

// HomeStore is what App Home reads and keeps in the store. Package store
// implements it over Redis. A Service serves Homes when its Store
// implements HomeStore too (store.Store does), and keeps them fresh when
// its Scheduler implements HomeScheduler too (store.JobQueue does); with
// neither, Homes show grants only and are republished only when opened.
type HomeStore interface {
	// Pending returns at most limit requests still pending, soonest
	// deadline first, at most perRequester of them of one requester
	// (Origin.Requester), each read only as far as a Home shows it: long
	// arguments cut, no results. partial reports that some pending
	// requests were left out.
	Pending(ctx context.Context, limit, perRequester int) (reqs []*Request, partial bool, err error)
	// HomeOpened records that user opened their Home now, for ttl.
	HomeOpened(ctx context.Context, user string, ttl time.Duration) error
	// HomeViewers returns which of users opened their Home within ttl.
	HomeViewers(ctx context.Context, users []string, ttl time.Duration) ([]string, error)
}

// HomeScheduler republishes a person's Home once, after delay, however
// many changes ask for it meanwhile. store.JobQueue implements it.
type HomeScheduler interface {
	ScheduleHome(ctx context.Context, user string, delay time.Duration) error
}

// homeStore is the Service's HomeStore, or nil.
func (s *Service) homeStore() HomeStore {
	h, _ := s.store.(HomeStore)
	return h
}

// homeScheduler is the Service's HomeScheduler, or nil.
func (s *Service) homeScheduler() HomeScheduler {
	h, _ := s.scheduler.(HomeScheduler)
	return h
}

// HomeCall is one call a Home lists, with the request it belongs to.
type HomeCall struct {
	// Request is read as far as a Home shows it (HomeStore.Pending): to
	// act on it, read it whole.
	Request *Request
	Call    *Call
	// Escalated: the viewer may decide it because it escalated to them.
	Escalated bool
	// Single: fewer than two of its request's pending approvals wait for
	// the viewer, so its row offers no batch (see View).
	Single bool
}

// View is the view of hc's call as the viewer's Home shows it: the card's
// (vw.View), without "Approve all" where the viewer may decide only this
// one of its request's calls.
func (hc HomeCall) View(vw Viewer) CallView {
	v := vw.View(hc.Request, hc.Call)
	if hc.Single {
		v.Batch = nil
	}
	return v
}

// HomeView is what a person's Home shows.
type HomeView struct {
	Viewer string
	// Waiting holds the pending calls Viewer may decide, oldest first,
	// shared among their requesters (shareRoom); MoreWaiting counts those
	// left out past MaxHomeCalls.
	Waiting     []HomeCall
	MoreWaiting int
	// Requests holds Viewer's own pending calls (as requester), oldest
	// first; MoreRequests counts those left out.
	Requests     []HomeCall
	MoreRequests int
	// Grants holds the grants in force that Viewer made.
	Grants []Grant
	// Partial: not every pending request was read (more than MaxHomeScan
	// wait), or some approvers could not be looked up.
	Partial bool
}

// Home returns what viewer's App Home shows: the pending calls they may
// decide now (the authorization of a click from their Home: the route's
// approvers and usergroups, its escalation approvers once it escalated,
// never their own call unless the route allows self-approval), their own
// pending requests, and their grants. Without a HomeStore it shows only
// the grants.
func (s *Service) Home(ctx context.Context, viewer string) (*HomeView, error) {
	v := &HomeView{Viewer: viewer}
	var err error
	if v.Grants, err = s.Grants(ctx, viewer); err != nil {
		return nil, err
	}
	home := s.homeStore()
	if home == nil || viewer == "" {
		return v, nil
	}
	pending, partial, err := home.Pending(ctx, MaxHomeScan, MaxHomeScanPerRequester)
	if err != nil {
		return nil, err
	}
	v.Partial = partial
	slices.SortStableFunc(pending, func(a, b *Request) int { return a.CreatedAt.Compare(b.CreatedAt) })
	var waiting []HomeCall
	now := s.now()
	for _, r := range pending {
		if !now.Before(r.ExpiresAt) {
			continue
		}
		for i := range r.Calls {
			c := &r.Calls[i]
			if c.Status != CallPending {
				continue
			}
			if r.Origin.User == viewer {
				v.Requests, v.MoreRequests = appendBounded(v.Requests, v.MoreRequests, HomeCall{Request: r, Call: c})
			}
			switch err := s.authorize(ctx, r, c, Decider{User: viewer, Home: true}, decideAction(c.Kind)); {
			case err == nil:
				waiting = append(waiting, HomeCall{Request: r, Call: c, Escalated: s.escalatedFor(ctx, r, c, viewer)})
			case ErrorCode(err) == EUNAVAILABLE:
				v.Partial = true
			}
		}
	}
	markSingles(waiting)
	v.Waiting, v.MoreWaiting = shareRoom(waiting, MaxHomeCalls)
	return v, nil
}

// markSingles marks the approvals that are the only ones of their request
// waiting for the viewer: a batch from their row would decide nothing
// more than their own buttons, and refuse the rest.
func markSingles(waiting []HomeCall) {
	n := map[string]int{}
	for _, hc := range waiting {
		if hc.Call.Kind == agentrunner.KindApproval {
			n[hc.Request.Token]++
		}
	}
	for i := range waiting {
		waiting[i].Single = n[waiting[i].Request.Token] < 2
	}
}

// shareRoom keeps at most room of calls (oldest first), taken from their
// requesters in turn — the oldest call of each, then the second oldest of
// each… — so that one requester's many calls leave room for everyone
// else's; it returns them oldest first, and how many it left out.
func shareRoom(calls []HomeCall, room int) ([]HomeCall, int) {
	if len(calls) <= room {
		return calls, 0
	}
	// turn[i]: how many older calls of the same requester come before i.
	turn := make([]int, len(calls))
	seen := map[string]int{}
	for i, hc := range calls {
		who := hc.Request.Origin.Requester()
		turn[i] = seen[who]
		seen[who]++
	}
	order := make([]int, len(calls))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(turn[a], turn[b]) })
	kept := order[:room]
	slices.Sort(kept)
	out := make([]HomeCall, 0, room)
	for _, i := range kept {
		out = append(out, calls[i])
	}
	return out, len(calls) - room
}

// HomeOpened records that user looks at their Home (they opened it, or
// clicked on it): for HomeViewerTTL, changes that concern them republish
// it. A failure is logged: their Home is only republished when opened.
func (s *Service) HomeOpened(ctx context.Context, user string) {
	home := s.homeStore()
	if home == nil || user == "" {
		return
	}
	if err := home.HomeOpened(ctx, user, HomeViewerTTL); err != nil {
		s.log.WarnContext(ctx, "record a Home viewer", "err", err)
	}
}

// decideAction is the action a Home's first button takes on a call of
// kind: its authorization decides whether the call is listed.
func decideAction(kind agentrunner.CallKind) Action {
	if kind == agentrunner.KindApproval {
		return ActionApprove
	}
	return ActionAnswer
}

func appendBounded(list []HomeCall, more int, hc HomeCall) ([]HomeCall, int) {
	if len(list) >= MaxHomeCalls {
		return list, more + 1
	}
	return append(list, hc), more
}

// escalatedFor reports whether user may decide c only because it escalated.
func (s *Service) escalatedFor(ctx context.Context, r *Request, c *Call, user string) bool {
	route := s.Route(c.Route)
	if route == nil || !s.Escalated(r, c) {
		return false
	}
	own, err := route.IsApprover(ctx, user, s.dir.Members)
	return err == nil && !own
}

// homeChanged republishes, once each within HomeCoalesce, the Homes of the
// people call c of r concerns who watch their Home: those who may decide
// it (its route's approvers, its escalation approvers once it escalated)
// and its requester. At most MaxHomeRefresh Homes; a failure is logged
// (the Homes are only stale until they are opened again).
func (s *Service) homeChanged(ctx context.Context, r *Request, c *Call) {
	home, refresh := s.homeStore(), s.homeScheduler()
	if home == nil || refresh == nil {
		return
	}
	users := s.concerned(ctx, r, c)
	if len(users) == 0 {
		return
	}
	viewers, err := home.HomeViewers(ctx, users, HomeViewerTTL)
	if err != nil {
		s.log.WarnContext(ctx, "look up Home viewers", "err", err)
		return
	}
	if len(viewers) > MaxHomeRefresh {
		s.log.WarnContext(ctx, "too many Homes to republish for one change; the rest stay stale until opened", "viewers", len(viewers), "call", c.ID)
		viewers = viewers[:MaxHomeRefresh]
	}
	for _, u := range viewers {
		if err := refresh.ScheduleHome(ctx, u, HomeCoalesce); err != nil {
			s.log.WarnContext(ctx, "schedule a Home refresh", "err", err)
			return
		}
	}
}

// maxConcerned bounds the people one change is looked up for.
const maxConcerned = 1000

// concerned lists the people call c of r concerns: its requester, its
// route's approvers and, once it escalated, its escalation approvers
// (usergroups through the Directory; a group that cannot be looked up is
// left out).
func (s *Service) concerned(ctx context.Context, r *Request, c *Call) []string {
	users := []string{}
	if r.Origin.User != "" {
		users = append(users, r.Origin.User)
	}
	route := s.Route(c.Route)
	if route == nil {
		return users
	}
	add := func(ids, groups []string) {
		users = append(users, ids...)
		for _, g := range groups {
			members, err := s.dir.Members(ctx, g)
			if err != nil {
				s.log.WarnContext(ctx, "look up a usergroup for Home refresh", "err", err, "usergroup", g)
				continue
			}
			users = append(users, members...)
		}
	}
	add(route.Users, route.Usergroups)
	if route.Escalate != nil && s.Escalated(r, c) {
		add(route.Escalate.Users, route.Escalate.Usergroups)
	}
	slices.Sort(users)
	users = slices.Compact(users)
	return users[:min(len(users), maxConcerned)]
}
