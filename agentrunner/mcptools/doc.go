// Package mcptools offers the tools of MCP (Model Context Protocol) servers
// to an agentrunner.Runner, through the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// # Configuration
//
// slackbot reads the servers from the mcp_servers section of its routing
// file (ROUTES_FILE); each entry becomes a Config:
//
//	mcp_servers:
//	  - name: github                            # tools are github__<tool>
//	    command: ["github-mcp-server", "stdio"]  # stdio: the server's argv
//	    env: {GITHUB_TOKEN: "${GITHUB_TOKEN}"}   # added to the child's environment
//	  - name: tickets
//	    url: https://mcp.example.com/mcp         # streamable HTTP
//	    headers: {Authorization: "Bearer ${TICKETS_TOKEN}"}
//	    read_only: ["search_tickets", "get_*"]  # globs: these need no approval
//	    timeout: 30s                             # per call; default 1m
//
// An entry has exactly one of command and url. ${NAME} in env values,
// header values and the url is replaced from slackbot's environment when
// the servers are started (NewToolset, Connect), not when the file is
// loaded, so `slackbot routes check` works without the secrets; a variable
// that is not set, or is empty, stops start-up with an error naming it.
// $$ is a literal '$'; any other '$' is an error, so that a mistyped
// $TOKEN is caught rather than sent.
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
// # Availability
//
// A Toolset connects to every server in the background and reconnects
// with backoff; a server that is down leaves the others usable, and calls
// of its tools fail with an *UnavailableError ("MCP server github is
// unavailable (stdio github-mcp-server): ...") that the model sees as the
// call's failed outcome. A server's tool list is read again when it
// announces a change, on reconnection and on every health check; the
// Toolset's Changed channel says when to rebuild the runner. Close stops
// stdio servers: stdin is closed, then SIGTERM and SIGKILL follow if the
// server does not exit.
//
// Results map to what the model sees as follows: structured content as
// JSON, otherwise the text parts joined by newlines (other parts are
// described in brackets); a result flagged isError becomes a *ToolError,
// recorded as a failed outcome. A call the server does not answer within
// the server's timeout fails with ErrTimeout, and may still take effect.
package mcptools
