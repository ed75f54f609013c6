// Package agentrunner runs AI agents whose risky tool calls wait for a
// person, with the semantics of Pydantic AI's deferred tools.
//
// A Runner asks its Model, executes the tools the model calls, and defers
// the calls that need a decision (tools made with RequiresApproval, or that
// return RequireApproval for some arguments) or an outside result (DeferCall,
// Question). Deferred calls go to the run's DeferredHandlers in order: a
// policy can decide some at once; an AskHandler innermost hands the rest and
// a resume token to people (Slack, in slackbot) and waits on ExternalEvents
// until the token is resolved, fails, is cancelled or expires. What no
// handler decides ends the run with status pending and a DeferredToolRequests
// (stop-the-world); a later Run with the history and DeferredToolResults
// continues it.
//
// DeferredToolRequests, DeferredToolResults and the message history marshal
// to Pydantic AI's JSON wire format, so runs can be stored, resumed in
// another process, and exchanged with agents written in Python.
//
// The package knows neither Slack nor Redis.
package agentrunner
