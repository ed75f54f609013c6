// Package client is a Go client of slackbot's HTTP API for agents, /v1:
// open an approval request for an agent's tool calls, wait for people to
// decide in Slack (a long poll), answer calls yourself where a route
// allows it, or cancel.
//
// The wire format of calls and results is Pydantic AI's deferred tools,
// as package agentrunner models it (ToolCallPart, DeferredToolResults).
// Errors are typed: *Error is slackbot's refusal or failure (its HTTP
// status and stable code, compared with the Code constants), and
// *UnreachableError a request that got no response; IsTransient tells
// the errors that may pass when the request is made again from those
// that will not. A response that is not what the API documents is a
// *ResponseError.
//
// The API key is sent only in the Authorization header: no error, and no
// formatting of a Client, shows it.
package client
