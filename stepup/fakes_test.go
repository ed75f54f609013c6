package stepup

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// memStore is the Store port in memory, with the semantics store's
// Redis implementation has (store/passkeys_test.go checks that one).
type memStore struct {
	mu     sync.Mutex
	keys   map[string][]Passkey
	totp   map[string][]byte
	step   map[string]int64
	regs   map[string]RegistrationLink
	events []PasskeyEvent
	fails  map[string]failCount
	// removed is when each person last removed a credential.
	removed map[string]time.Time
	now     func() time.Time
}

type failCount struct {
	n     int
	until time.Time
}

func newMemStore(now func() time.Time) *memStore {
	return &memStore{keys: map[string][]Passkey{}, totp: map[string][]byte{}, step: map[string]int64{}, regs: map[string]RegistrationLink{}, fails: map[string]failCount{}, removed: map[string]time.Time{}, now: now}
}

func who(team, user string) string { return team + "/" + user }

func (m *memStore) Passkeys(_ context.Context, team, user string) ([]Passkey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.keys[who(team, user)]), nil
}

func (m *memStore) AddPasskey(_ context.Context, team, user string, p Passkey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if slices.ContainsFunc(m.keys[who(team, user)], func(k Passkey) bool { return k.ID == p.ID }) {
		return ErrPasskeyExists
	}
	if len(m.keys[who(team, user)]) >= MaxPasskeys {
		return ErrPasskeyLimit
	}
	m.keys[who(team, user)] = append(m.keys[who(team, user)], p)
	return nil
}

func (m *memStore) RemovePasskey(_ context.Context, team, user, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ks := m.keys[who(team, user)]
	i := slices.IndexFunc(ks, func(p Passkey) bool { return p.ID == id })
	if i < 0 {
		return false, nil
	}
	m.keys[who(team, user)] = slices.Delete(ks, i, i+1)
	m.removed[who(team, user)] = m.now()
	return true, nil
}

func (m *memStore) LastRemoval(_ context.Context, team, user string) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.removed[who(team, user)], nil
}

func (m *memStore) UsePasskey(_ context.Context, team, user, id string, n uint32, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ks := m.keys[who(team, user)]
	i := slices.IndexFunc(ks, func(p Passkey) bool { return p.ID == id })
	if i < 0 {
		return ErrPasskeyGone
	}
	if (n != 0 || ks[i].SignCount != 0) && n <= ks[i].SignCount {
		return ErrSignCount
	}
	ks[i].SignCount, ks[i].LastUsed = n, at
	return nil
}

func (m *memStore) SaveRegistration(_ context.Context, l RegistrationLink) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.regs[l.ID] = l
	return nil
}

func (m *memStore) reg(id string, take bool) *RegistrationLink {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.regs[id]
	if !ok || !m.now().Before(l.Expires) {
		return nil
	}
	if take {
		delete(m.regs, id)
	}
	return &l
}

func (m *memStore) TakeRegistration(_ context.Context, id string) (*RegistrationLink, error) {
	return m.reg(id, true), nil
}

func (m *memStore) RegistrationLink(_ context.Context, id string) (*RegistrationLink, error) {
	return m.reg(id, false), nil
}

func (m *memStore) AuditPasskey(_ context.Context, e PasskeyEvent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, e)
	return nil
}

func (m *memStore) TOTP(_ context.Context, team, user string) ([]byte, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.totp[who(team, user)], time.Time{}, nil
}

func (m *memStore) SetTOTP(_ context.Context, team, user string, secret []byte, _ time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.totp[who(team, user)] = secret
	delete(m.step, who(team, user))
	return nil
}

func (m *memStore) RemoveTOTP(_ context.Context, team, user string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.totp[who(team, user)]
	delete(m.totp, who(team, user))
	if ok {
		m.removed[who(team, user)] = m.now()
	}
	return ok, nil
}

func (m *memStore) UseTOTPStep(_ context.Context, team, user string, step int64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if last, ok := m.step[who(team, user)]; ok && step <= last {
		return false, nil
	}
	m.step[who(team, user)] = step
	return true, nil
}

func (m *memStore) count(key string) int {
	if f := m.fails[key]; m.now().Before(f.until) {
		return f.n
	}
	return 0
}

func (m *memStore) TOTPFailures(_ context.Context, team, user, scope string) (int, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count(scope), m.count(who(team, user)), nil
}

func (m *memStore) TOTPFailed(_ context.Context, team, user, scope string, scopeTTL, window time.Duration) (int, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	inc := func(key string, ttl time.Duration) int {
		f := m.fails[key]
		if !m.now().Before(f.until) {
			f = failCount{until: m.now().Add(ttl)}
		}
		f.n++
		m.fails[key] = f
		return f.n
	}
	return inc(scope, scopeTTL), inc(who(team, user), window), nil
}

// fakeApprovals stands in for approval.Service's step-up: links as
// BeginStepUp would write them, and a completion that takes the link once,
// refuses another user, and records the proof.
type fakeApprovals struct {
	mu       sync.Mutex
	links    map[string]*approval.StepUpLink
	reqs     map[string]*approval.Request
	now      func() time.Time
	recorded []recorded
}

type recorded struct {
	LinkID, Team, User string
	Proof              approval.StepUp
}

func newFakeApprovals(now func() time.Time) *fakeApprovals {
	return &fakeApprovals{links: map[string]*approval.StepUpLink{}, reqs: map[string]*approval.Request{}, now: now}
}

// add writes a link for the calls (tool, args) of a new pending request.
func (f *fakeApprovals) add(id, team, user string, methods []string, calls ...agentrunner.ToolCallPart) *approval.StepUpLink {
	f.mu.Lock()
	defer f.mu.Unlock()
	req := &approval.Request{Token: "tok-" + id, State: approval.StatePending, Requests: agentrunner.DeferredToolRequests{Approvals: calls},
		ExpiresAt: f.now().Add(time.Hour)}
	l := &approval.StepUpLink{ID: id, Team: team, User: user, Token: "secret-" + id, Methods: methods, Expires: f.now().Add(5 * time.Minute)}
	for _, c := range calls {
		req.Calls = append(req.Calls, approval.Call{ID: c.ToolCallID, Route: "payments", Status: approval.CallPending})
		l.Calls = append(l.Calls, approval.StepUpCall{CallID: c.ToolCallID, ArgsDigest: "digest-of-" + string(c.Args)})
	}
	f.links[id], f.reqs[id] = l, req
	return l
}

func (f *fakeApprovals) StepUpLink(_ context.Context, id string) (*approval.StepUpLink, *approval.Request, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.links[id]
	if !ok || !f.now().Before(l.Expires) {
		return nil, nil, approval.ErrNotFound
	}
	cp := *l
	return &cp, f.reqs[id], nil
}

func (f *fakeApprovals) CompleteStepUp(_ context.Context, id, team, user string, proof approval.StepUp) (*approval.Decided, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.links[id]
	if !ok {
		return nil, approval.ErrNotFound
	}
	delete(f.links, id)
	if l.Team != team || l.User != user {
		return nil, approval.Errorf(approval.EFORBIDDEN, "this link is another approver's")
	}
	if !f.now().Before(l.Expires) {
		return nil, approval.ErrExpired
	}
	f.recorded = append(f.recorded, recorded{id, team, user, proof})
	for i := range f.reqs[id].Calls {
		f.reqs[id].Calls[i].Status = approval.CallApproved
	}
	return &approval.Decided{}, nil
}

func (f *fakeApprovals) records() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.recorded)
}

// decideElsewhere marks the link's calls decided by someone else.
func (f *fakeApprovals) decideElsewhere(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.reqs[id].Calls {
		f.reqs[id].Calls[i].Status = approval.CallDenied
		f.reqs[id].Calls[i].DecidedBy = "U_OTHER"
	}
}
