// Package approval is slackbot's domain: a person's say over an AI agent's
// tool calls.
//
// A run that reaches calls it may not make alone opens a Request under an
// unguessable resume token: one Call per pending tool call, each routed to
// the approvers of a route of the routing file. People (or a policy, or an
// API client) decide the calls; a Decision on a call that needs several
// approvers is a Vote until the quorum is reached. When every call is
// decided the Request is resolved and the run continues with the results;
// it can also expire, be cancelled or fail, and then every undecided call
// gets "no decision".
//
// What a person is shown of a call is decided here too, once for every
// surface: a CallView (view.go: what to see, which Choices they have) and
// its words (words.go, words_home.go, explain.go), written through a
// surface's Marks; a surface (package bot's Block Kit) only lays them out.
//
// The package has one model of an approval and one error vocabulary
// (Error, with a Code that the HTTP API maps to a status, Explain to a
// sentence and the metrics to a label), and the interfaces it consumes:
// Store (implemented by package store over Redis), Poster and Directory
// (implemented by package bot over Slack). It imports no Slack and no
// Redis code.
package approval
