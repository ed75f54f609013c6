package runs

import (
	"context"
	"errors"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// Chat is where runs talk to people: the thread a run was asked in. bot
// implements it over Slack.
type Chat interface {
	// PostInThread posts text as a reply in a thread (or to the channel
	// when threadTS is empty).
	PostInThread(ctx context.Context, channel, threadTS, text string) error
	// PostAnswer posts a's text in its thread with a marker of a.Key and
	// returns the message's id. With look set (an earlier attempt may have
	// posted it) it first looks for the marker and returns the message it
	// finds instead of posting again.
	PostAnswer(ctx context.Context, a Answer, look bool) (string, error)
	// ThreadMessages reads a thread the chat shows but no history is kept
	// for: its last limit messages before the message exclude, botUser's
	// as the model's turns.
	ThreadMessages(ctx context.Context, channel, threadTS, exclude, botUser string, limit int) ([]agentrunner.Message, error)
	// Escape makes model or user text safe to post: it cannot mention
	// anyone or link anywhere.
	Escape(text string) string
	// ToolLabel is how people see a tool's name.
	ToolLabel(tool string) string
}

// Approvals is the part of approval.Service a run's end needs: the
// request of a token, the tools' outcomes on its calls, and its cards.
type Approvals interface {
	Get(ctx context.Context, token string) (*approval.Request, error)
	RecordOutcome(ctx context.Context, token, callID string, o approval.Outcome) error
	UpdateCard(ctx context.Context, token, callID string) error
	UpdateCards(ctx context.Context, token string) error
}

var _ Approvals = (*approval.Service)(nil)

// Errors of a Threads implementation.
var (
	// ErrNoThreadHistory: no history is kept for the thread.
	ErrNoThreadHistory = errors.New("no history for the thread")
	// ErrThreadBusy: too many messages already wait in the thread.
	ErrThreadBusy = errors.New("too many messages wait in the thread")
)

// Threads keeps each thread's conversation and lets its runs take turns.
type Threads interface {
	// History returns the thread's history, ErrNoThreadHistory, or another
	// error (one that no longer decodes, Redis down): the run then starts
	// afresh.
	History(ctx context.Context, th ThreadRef) ([]agentrunner.Message, error)
	// SaveHistory keeps msgs as the thread's history (trimmed to a cap).
	SaveHistory(ctx context.Context, th ThreadRef, msgs []agentrunner.Message) error
	// Enter asks for the thread for t: it returns the turn that runs now
	// (t, or one queued earlier; t then waits), or nil when t waits behind
	// a running turn. ErrThreadBusy when the queue is full.
	Enter(ctx context.Context, th ThreadRef, t Turn, lease time.Duration) (*Turn, error)
	// Leave ends runID's turn and returns the next one, which now holds
	// the thread, or nil.
	Leave(ctx context.Context, th ThreadRef, runID string, lease time.Duration) (*Turn, error)
	// Hold extends runID's hold on the thread to at least ttl.
	Hold(ctx context.Context, th ThreadRef, runID string, ttl time.Duration) (bool, error)
}

// ErrRunNotFound: no state is saved for the run (it ended, or its state
// expired); it cannot be resumed.
var ErrRunNotFound = errors.New("run state not found")

// Saved is a hibernated run as RunStore keeps it: the token it waits on,
// its history up to the pending calls, those calls, and its origin.
type Saved struct {
	RunID    string
	Token    string
	Messages []agentrunner.Message
	Pending  agentrunner.DeferredToolRequests
	Origin   approval.Origin
	// OriginErr is set when the origin no longer decodes: the run resumes
	// without it (its answer has no thread to go to).
	OriginErr error
}

// RunStore keeps hibernated runs and the claims that let exactly one
// process resume each.
type RunStore interface {
	// LoadRun returns run runID's saved state, or ErrRunNotFound.
	LoadRun(ctx context.Context, runID string) (*Saved, error)
	// DeleteRun forgets run runID's saved state.
	DeleteRun(ctx context.Context, runID string) error
	// ClaimDirect claims the resumption of token's run for claimer, the
	// process that ended its request; false when a live process holds or
	// waits on the run.
	ClaimDirect(ctx context.Context, token, claimer string) (bool, error)
	// ClaimResume claims it for a resume-queue consumer; false when a
	// live process holds it.
	ClaimResume(ctx context.Context, token, claimer string) (bool, error)
	// ReleaseResume gives claimer's claim back, so the job is retried.
	ReleaseResume(ctx context.Context, token, claimer string) error
	// FinishResume says the run of token needs no resuming from it any
	// more, and takes the token's resume job off the queue.
	FinishResume(ctx context.Context, token string) error
	// AckResume takes resume job id off the resume queue.
	AckResume(ctx context.Context, id string) error
}

// JobKind is a kind of job on the durable job queue.
type JobKind int

// The job kinds a run's end queues.
const (
	// JobAnswer posts a run's answer (its Data is an Answer as JSON).
	JobAnswer JobKind = iota + 1
	// JobCards updates every card of a token (Token) from its record.
	JobCards
)

// Jobs is the durable job queue: any replica does what is queued, even if
// the process that queued it dies.
type Jobs interface {
	// Add queues a job and returns its id.
	Add(ctx context.Context, kind JobKind, token, data string) (string, error)
	// Ack takes job id off the queue: it is done.
	Ack(ctx context.Context, id string) error
}

// Answers keeps the marks of the answer-once protocol (Runs.PostAnswer).
type Answers interface {
	// BeginAnswer marks the answer key as being posted by attempt and
	// returns what an earlier attempt left: "" (post it), "posting" (it may
	// have been posted: look first), "busy" (a live process posts it: try
	// later) or "posted".
	BeginAnswer(ctx context.Context, key, attempt string) (string, error)
	// AnswerFailed records an attempt that failed, and may have posted.
	AnswerFailed(ctx context.Context, key string) error
	// AnswerPosted records that the answer of key is message ts.
	AnswerPosted(ctx context.Context, key, ts string) error
}

// Metrics counts how runs end and resume.
type Metrics interface {
	// RunEnded is told how a run ended: "complete", "pending" (suspended,
	// or calls left waiting), "failed".
	RunEnded(result string)
	// RunResumed is told a run resumes from its saved state, by how
	// (ResumeHowDirect or ResumeHowQueue), lag after its request ended
	// (negative: not known).
	RunResumed(how string, lag time.Duration)
}

// How a run resumes, as Metrics.RunResumed is told it: directly by the
// process that ended its request, or from the resume queue (another
// replica's end, an expiry, a takeover).
const (
	ResumeHowDirect = "direct"
	ResumeHowQueue  = "queue"
)

// ResumeHows lists every way a run resumes; metrics start each at zero.
var ResumeHows = []string{ResumeHowDirect, ResumeHowQueue}

// How a run ends, as Metrics.RunEnded is told it.
const (
	RunComplete = "complete"
	RunPending  = "pending" // suspended, or calls left waiting
	RunFailed   = "failed"
)

// RunResults lists every way a run ends; metrics start each at zero.
var RunResults = []string{RunComplete, RunPending, RunFailed}
