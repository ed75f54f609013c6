// Package agentrunner runs AI agents whose risky tool calls wait for a
// person, with the semantics of Pydantic AI's deferred tools.
//
// A Runner asks its Model, executes the tools the model calls, and defers
// the calls that need a decision (tools made with RequiresApproval, or that
// return RequireApproval for some arguments) or an outside result (DeferCall,
// Question). Tool arguments are validated against the JSON schema derived
// from the tool's Go args struct; invalid ones go back to the model as a
// retry prompt.
//
// Deferred calls go to the run's DeferredHandlers in order, each seeing only
// what the previous ones left: a policy can decide some at once; an
// AskHandler innermost hands the rest and a resume token to people (Slack,
// in slackbot) and waits on Tokens until the token is resolved,
// fails, is cancelled or expires. A wait that ends without an answer denies
// every pending approval and fails every pending call with NoDecisionPrefix
// and the reason, and the run goes on so the model can tell the user. A wait
// cut short by the run's context returns the context's error and denies
// nothing, so the run can be resumed elsewhere when the answer arrives.
// With AskHandler.Asker another component (slackbot's approval.Service)
// records the ask and alone ends it early; the handler then writes nothing
// and only waits on its Waiter.
// With AskHandler.Suspend the run does not wait at all: it returns at once
// with StatusSuspended, the token (RunResult.Suspended) and the calls
// handed out (RunResult.Pending), holding nothing while people decide;
// whoever records the answer resumes it with Run and RunInput{History,
// Pending, Results}, in any process.
//
// What no handler decides ends the run with status pending and a
// DeferredToolRequests (stop-the-world), when RunInput.AllowPending is set,
// and fails it with ErrUndecided otherwise. A later Run with the history,
// the DeferredToolResults and, ideally, the earlier requests
// (RunInput.Pending) continues it; PendingRun packages the three for a UI
// that saves a stopped run and resumes it once. Bad resumes fail before
// anything runs, with the errors Pydantic AI gives: ErrEmptyHistory,
// ErrNoUnprocessedCalls, ErrAlreadyExecuted, ErrIncompleteResults,
// ErrNotPending. RunResult.Applied records every answer a run applied and
// who gave it.
//
// DeferredToolRequests, DeferredToolResults and the message history marshal
// to Pydantic AI's JSON wire format, so runs can be stored, resumed in
// another process, and exchanged with agents written in Python.
//
// With a Journal (WithJournal) every tool call is recorded before and after
// its tool runs, with the run's history at each model response that made
// calls (a Checkpoint), so that a run resumed by another process after its
// own died goes on from the last checkpoint and runs no tool twice; a call
// that started and whose return was lost gets OutcomeLostText.
//
// TestModel and FunctionModel are models for tests; MemoryTokens is the
// in-process Tokens, with an injectable clock. The package knows
// neither Slack nor Redis.
package agentrunner
