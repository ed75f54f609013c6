package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// trail is one ordered record of what the fakes were asked, shared by all
// of them, so a test can check the order of a run's end across ports.
type trail struct {
	mu    sync.Mutex
	steps []string
}

func (l *trail) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.steps = append(l.steps, fmt.Sprintf(format, args...))
}

func (l *trail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.steps, ", ")
}

func (l *trail) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.steps = nil
}

// fakeChat is Chat over a trail: posts are recorded, ThreadMessages
// answers with thread (or threadErr).
type fakeChat struct {
	*trail
	thread    []agentrunner.Message
	threadErr error
	posted    []string
}

func (c *fakeChat) PostInThread(_ context.Context, channel, threadTS, text string) error {
	c.add("post %s/%s %q", channel, threadTS, text)
	c.mu.Lock()
	c.posted = append(c.posted, text)
	c.mu.Unlock()
	return nil
}

func (c *fakeChat) PostAnswer(_ context.Context, a Answer, look bool) (string, error) {
	c.add("answer %s look=%t", a.Key, look)
	c.mu.Lock()
	c.posted = append(c.posted, a.Text)
	c.mu.Unlock()
	return "1700000000.000100", nil
}

func (c *fakeChat) ThreadMessages(_ context.Context, channel, threadTS, exclude, _ string, _ int) ([]agentrunner.Message, error) {
	c.add("read thread %s/%s before %s", channel, threadTS, exclude)
	return c.thread, c.threadErr
}

func (c *fakeChat) Escape(text string) string { return strings.ReplaceAll(text, "<", "&lt;") }

func (c *fakeChat) ToolLabel(tool string) string { return strings.ReplaceAll(tool, "__", ".") }

// fakeApprovals is Approvals over one request per token.
type fakeApprovals struct {
	*trail
	mu       sync.Mutex
	requests map[string]*approval.Request
}

func (a *fakeApprovals) Get(_ context.Context, token string) (*approval.Request, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.requests[token]
	if !ok {
		return nil, approval.ErrNotFound
	}
	c := *r
	c.Calls = append([]approval.Call(nil), r.Calls...)
	return &c, nil
}

func (a *fakeApprovals) RecordOutcome(_ context.Context, token, callID string, o approval.Outcome) error {
	a.add("outcome %s/%s %s", token, callID, o.Status)
	return nil
}

func (a *fakeApprovals) UpdateCard(_ context.Context, token, callID string) error {
	a.add("update card %s/%s", token, callID)
	return nil
}

func (a *fakeApprovals) UpdateCards(_ context.Context, token string) error {
	a.add("update cards %s", token)
	return nil
}

// fakeJobs is Jobs over a trail; ids count up.
type fakeJobs struct {
	*trail
	n    int
	data map[string]string
}

func (j *fakeJobs) Add(_ context.Context, kind JobKind, token, data string) (string, error) {
	j.mu.Lock()
	j.n++
	id := fmt.Sprint(j.n)
	if j.data == nil {
		j.data = map[string]string{}
	}
	j.data[id] = data
	j.mu.Unlock()
	switch kind {
	case JobAnswer:
		j.add("queue answer")
	default:
		j.add("queue cards %s", token)
	}
	return id, nil
}

func (j *fakeJobs) Ack(_ context.Context, id string) error {
	j.add("ack %s", id)
	return nil
}

// fakeAnswers is Answers in memory: the answer-once marks.
type fakeAnswers struct {
	mu    sync.Mutex
	marks map[string]string
}

func (f *fakeAnswers) BeginAnswer(_ context.Context, key, attempt string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.marks == nil {
		f.marks = map[string]string{}
	}
	prev := f.marks[key]
	switch {
	case strings.HasPrefix(prev, "posted"):
		return "posted", nil
	case strings.HasPrefix(prev, "busy"):
		return "busy", nil
	case prev != "":
		prev = "posting"
	}
	f.marks[key] = "posting " + attempt
	return prev, nil
}

func (f *fakeAnswers) AnswerFailed(_ context.Context, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.marks[key] = "failed"
	return nil
}

func (f *fakeAnswers) AnswerPosted(_ context.Context, key, ts string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.marks[key] = "posted " + ts
	return nil
}

// fakeState is RunStore over a trail and a map of saved runs; claims are
// granted unless refused is set.
type fakeState struct {
	*trail
	mu      sync.Mutex
	saved   map[string]*Saved
	refused bool
	loadErr error
}

func (s *fakeState) LoadRun(_ context.Context, runID string) (*Saved, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loadErr != nil {
		return nil, s.loadErr
	}
	r, ok := s.saved[runID]
	if !ok {
		return nil, fmt.Errorf("load %s: %w", runID, ErrRunNotFound)
	}
	c := *r
	return &c, nil
}

func (s *fakeState) DeleteRun(_ context.Context, runID string) error {
	s.add("delete run %s", runID)
	return nil
}

func (s *fakeState) ClaimDirect(_ context.Context, token, claimer string) (bool, error) {
	s.add("claim %s for %s", token, claimer)
	return !s.refused, nil
}

func (s *fakeState) ClaimResume(_ context.Context, token, claimer string) (bool, error) {
	s.add("claim %s for %s", token, claimer)
	return !s.refused, nil
}

func (s *fakeState) ReleaseResume(_ context.Context, token, claimer string) error {
	s.add("release %s", token)
	return nil
}

func (s *fakeState) FinishResume(_ context.Context, token string) error {
	s.add("done %s", token)
	return nil
}

func (s *fakeState) AckResume(_ context.Context, id string) error {
	s.add("ack resume job %s", id)
	return nil
}

// fakeMetrics counts how runs end and resume.
type fakeMetrics struct {
	mu             sync.Mutex
	ended, resumed []string
}

func (m *fakeMetrics) RunEnded(result string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ended = append(m.ended, result)
}

func (m *fakeMetrics) RunResumed(path string, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resumed = append(m.resumed, path)
}

func (m *fakeMetrics) got() (ended, resumed []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.ended...), append([]string(nil), m.resumed...)
}

// world is a Runs over the fakes, durable (Jobs, Answers, State set),
// with one resolved request whose one call was approved.
type world struct {
	trail     *trail
	chat      *fakeChat
	approvals *fakeApprovals
	jobs      *fakeJobs
	answers   *fakeAnswers
	state     *fakeState
	metrics   *fakeMetrics
	rs        *Runs
	request   *approval.Request
}

const (
	testToken  = "tok_resolved"
	testCallID = "call_refund"
)

var testOrigin = approval.Origin{Team: "T1", Channel: "C0SUPPORT", ThreadTS: "1700000000.000001", User: "U0CAROL"}

func newWorld() *world {
	l := &trail{}
	w := &world{trail: l, chat: &fakeChat{trail: l}, jobs: &fakeJobs{trail: l}, answers: &fakeAnswers{},
		state: &fakeState{trail: l, saved: map[string]*Saved{}}, metrics: &fakeMetrics{}}
	w.request = &approval.Request{Token: testToken, RunID: "run_1", Origin: testOrigin, State: approval.StateResolved,
		Calls: []approval.Call{{ID: testCallID, Tool: "issue_refund", Kind: agentrunner.KindApproval, Status: approval.CallApproved, Action: approval.ActionApprove}}}
	w.approvals = &fakeApprovals{trail: l, requests: map[string]*approval.Request{testToken: w.request}}
	w.rs = &Runs{Chat: w.chat, Approvals: w.approvals, Jobs: w.jobs, Answers: w.answers, State: w.state,
		Metrics: w.metrics, Owner: "proc1"}
	return w
}

// refundReturn is the history of a run whose refund ran.
func refundReturn() []agentrunner.Message {
	return []agentrunner.Message{{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{
		agentrunner.ToolReturn("issue_refund", testCallID, []byte(`"refunded $50"`), agentrunner.OutcomeSuccess),
	}}}
}

var errDown = errors.New("down")
