// Package mcpgateway is /mcp, the MCP approval gateway: an MCP server
// (the official Go SDK, streamable HTTP) that puts Slack approval in front
// of the tools of the routing file's mcp_servers, and offers
// approval_prompt, Claude Code's permission-prompt tool. Every call goes
// through approval.Service like every other door's: routes, policies and
// grants first, else a card; decisions are made on the cards, App Home or
// /v1, never here.
//
// Handler (gateway.go) is the server. A call of an upstream tool
// "<server>__<tool>" that its server marks read_only is proxied at once
// (upstream.go); any other is checked (arguments against the tool's
// schema, the server answering), opened as one approval call for the API
// key (Handler.open → approval.OpenForClient), and waited on (ask.go),
// with progress notifications, until its request ends. approval_prompt
// (prompt.go) opens the call under the prompted tool's own name and
// answers {"behavior":"allow","updatedInput":…} or
// {"behavior":"deny","message":…}.
//
// What the package keeps:
//
//   - An upstream tool runs only on an approval by a person, a policy or a
//     grant, with the approved (possibly edited) arguments, once per
//     request; never on an approval by the API key that asked (outcome),
//     whatever the route allows at /v1. Every upstream call is audited.
//   - Every failure of approval_prompt is a deny with the reason, and its
//     updatedInput is always the whole input, so Claude Code never runs
//     what nobody approved.
//   - A key restricted to routes is offered and may call only the tools
//     its routes match (scope.go).
//   - A client that goes away, or cancels the call's JSON-RPC id on any
//     replica (cancel.go), cancels its request: a later click decides
//     nothing.
//   - The server is stateless, so any replica answers any request; a
//     retry reaches its first attempt's request only through an
//     idempotency key (the client's, or approval_prompt's tool_use_id),
//     never through the JSON-RPC id.
//
// How each outcome reaches the client, cancellation in detail, the
// approval_prompt contract and its sources, client set-up (Claude Code,
// Cursor, VS Code), replicas and retries are in docs/OPERATIONS.md ("The
// MCP gateway").
package mcpgateway
