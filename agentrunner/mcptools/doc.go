// Package mcptools offers the tools of MCP (Model Context Protocol) servers
// to an agentrunner.Runner, through the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// Each entry of the routing file's mcp_servers section becomes a Config:
// a stdio server (command) or a streamable-HTTP one (url), with env,
// headers, read_only globs and a per-call timeout. ${NAME} references are
// expanded from the environment when the servers start (NewToolset,
// Connect), not when the file is loaded. A Toolset connects to every
// server in the background, reconnects with backoff, and rereads tool
// lists on change (its Changed channel says when to rebuild the runner).
//
// The model sees each tool as "<server>__<tool>" (ToolName): model APIs
// take names of at most 64 characters from [A-Za-z0-9_-], so server names
// are short and cannot contain "__", and a tool name that does not fit is
// shortened with a hash suffix. Routes match these names, e.g. tools:
// ["github__*"]. Approvers are shown the server's own name instead:
// `Run github.create_issue({"title":"x"})?`.
//
// # Security
//
// An MCP tool runs with the privileges of its server: a stdio server runs
// as slackbot's user, an HTTP server with whatever the headers' credentials
// allow. Approval is what gates them: every tool of a server requires
// approval (agentrunner.RequiresApproval), and so goes through the routing
// file's routes, unless the operator lists it in that server's read_only
// globs. A server's own readOnlyHint annotation is ignored, since a server
// would be vouching for itself. List as read-only only tools that change
// nothing; a tool the server adds later is behind approval until listed.
//
// A stdio server inherits only HOME, LANG, LOGNAME, PATH, SHELL, TERM,
// TMPDIR, TZ and USER plus its env entries, never slackbot's Slack tokens
// or API keys. Headers are sent only to the host of the server's url, not to
// hosts it redirects to. Messages name a server's transport without its
// arguments, credentials or query string.
//
// What a server may send is bounded (Config.Limits): each message is read
// through a limit that fails as soon as it is passed (a streamable-HTTP
// body, each server-sent event, each stdio message), and its tools, their
// schemas and descriptions are limited too. A server over a limit is cut
// off like one that is down, except that its tools are withdrawn; its
// *UnavailableError wraps a *LimitError naming the limit.
//
// Results map to what the model sees as follows: structured content as
// JSON, otherwise the text parts joined by newlines (other parts are
// described in brackets); a result flagged isError becomes a *ToolError,
// recorded as a failed outcome. A call of a server that is down fails
// with an *UnavailableError, and one the server does not answer within its
// timeout with ErrTimeout (it may still take effect).
//
// The configuration format with an example, the rules for ${NAME}, and
// how a Toolset behaves when servers go down are in docs/OPERATIONS.md
// ("MCP servers for the agent").
package mcptools
