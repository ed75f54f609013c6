// Package mcpgateway is /mcp, the MCP approval gateway: an MCP server
// (the official Go SDK, streamable HTTP) that puts Slack approval in front
// of the tools of the routing file's mcp_servers, and offers
// approval_prompt, Claude Code's permission-prompt tool. Every call goes
// through approval.Service like every other door's: routes, policies and
// grants first, else a card; decisions are made on the cards, App Home or
// /v1, never here.
//
// # Tools
//
// tools/list offers each upstream tool as "<server>__<tool>" with the
// server's description, input and output schemas and annotations, plus
// approval_prompt; a key restricted to routes is offered, and may call,
// only the upstream tools its routes match (approval.Service.MayCall),
// read-only ones included. A call of a tool that matches its server's
// read_only globs is proxied at once, counted against the key's API_RATE.
// Every call made upstream, read-only or approved, is audited
// (upstream_call: key, tool, argument digest, outcome). Any other call is
// checked first (arguments
// against the tool's input schema; the server answering a ping), so that
// nobody is asked to approve a call that could not run, then opened as one
// approval call {tool_name: "<server>__<tool>", args, tool_call_id} for
// the API key (requester on the card: "<key name> via <clientInfo name
// and version>", policies see api:<key name>; a key's @routes restriction
// applies). The MCP request then waits, sending a progress notification
// every 10 s when the client asked for them (progressToken), bounded by
// the route's timeout:
//
//   - approved: the upstream is called once with the approved arguments
//     (the edited ones when an approver edited them) and its result is
//     returned as it came; the receipt, when the results carry one, is in
//     its _meta as "slackbot_receipt".
//   - denied: a tool error (isError) whose text is the reason.
//   - approved by the API key that asked (through /v1, where a route sets
//     allow_self_approval): a tool error saying so; the upstream is not
//     called. The key is the agent's own, and the gateway exists to put
//     someone else between the agent and the tool, so it acts only on an
//     approval by a person, a policy or a grant, whatever the route
//     allows at /v1. A team that wants a tool to run unasked says so
//     where it is recorded and audited as such: read_only, or the
//     route's auto_approve.
//   - no decision (expired, cancelled, failed): a tool error
//     "No decision on this tool call arrived: <reason>".
//   - refused (a route the key may not use, no route, the quota of
//     API_MAX_OPEN/API_RATE, which /v1 shares): a tool error saying why;
//     nothing is posted.
//
// An unknown tool is a JSON-RPC error (-32602), as the spec says. A
// client that goes away while it waits cancels its request (the card says
// "Cancelled by <key name>"), and so does a client that stays connected
// but sends notifications/cancelled naming the call's JSON-RPC id, as
// the TypeScript SDK does when a call's AbortSignal fires: the cancel is a
// POST of its own that may reach any replica, so each waiting call tracks
// its id in Redis, per API key, for as long as its request may wait, and
// the replica the cancel reaches cancels the request; the waiting call
// returns "No decision…", and a later click decides nothing. Two
// connections of one key that wait under the same id are both cancelled
// (a cancelled call never runs). Ids longer than 200 bytes are refused;
// a cancel naming an id nobody waits on is ignored. A replica that shuts
// down does not cancel: the waiting client is told to call again, and
// its retry gets the decision when the call has an idempotency key (see
// below); otherwise the request is withdrawn, its card saying so.
//
// # approval_prompt
//
// Claude Code asks the tool named by --permission-prompt-tool before it
// runs one of its tools that its own permission rules do not settle. The
// input is {tool_name, input, tool_use_id}; the call is opened under the
// prompted tool's own name, so routes match Bash, Edit, Write,
// mcp__github__create_issue (a team can auto_approve Read and Grep and
// send Bash to people), with args = input and tool_call_id =
// tool_use_id. The card leads with what will happen — "Claude Code wants
// to run `Bash`: `rm -rf build/`" — and its input can be edited. The
// result is one text item holding exactly
//
//	{"behavior":"allow","updatedInput":<the whole input, edited or not>}
//	{"behavior":"deny","message":"<reason>"}
//
// and every failure (bad input, a refusal, no decision, an approval by
// the API key that asked) is a deny with the reason, so Claude Code never
// runs what nobody approved. updatedInput is
// never {}: Claude Code runs the tool with updatedInput as its whole input.
// The contract is not in Claude Code's reference pages; it is the one of
// its permission callbacks, as recorded in anthropics/claude-code issue
// #1175 (comments 2908916791 and 2927478549), in
// anthropics/claude-agent-sdk-python PR #216 ("behavior" allow/deny,
// "updatedInput" always included, "message" for denials), and in the fixes
// for Claude Code 2.1, which refuses an allow without an updatedInput
// record (openclaw/openclaw PRs #97969 and #98665).
//
// # Use it
//
// Claude Code (a key of API_KEYS; the second line sends its permission
// prompts to Slack):
//
//	claude mcp add --transport http slackbot https://slackbot.example.com/mcp --header "Authorization: Bearer $SLACKBOT_API_KEY"
//	claude -p --permission-prompt-tool mcp__slackbot__approval_prompt "…"
//
// Cursor (.cursor/mcp.json):
//
//	{"mcpServers": {"slackbot": {"url": "https://slackbot.example.com/mcp",
//	  "headers": {"Authorization": "Bearer ${env:SLACKBOT_API_KEY}"}}}}
//
// VS Code (.vscode/mcp.json; it asks for the key once and keeps it):
//
//	{"servers": {"slackbot": {"type": "http", "url": "https://slackbot.example.com/mcp",
//	  "headers": {"Authorization": "Bearer ${input:slackbot-key}"}}},
//	 "inputs": [{"type": "promptString", "id": "slackbot-key", "description": "slackbot API key", "password": true}]}
//
// A routing file that lets reads through and sends writes to a channel:
//
//	mcp_servers:
//	  - name: github
//	    command: ["github-mcp-server", "stdio"]
//	    env: {GITHUB_TOKEN: "${GITHUB_TOKEN}"}
//	    read_only: ["get_*", "list_*", "search_*"]
//	routes:
//	  - name: reads
//	    when: {tools: ["Read", "Grep", "Glob"]}
//	    channel: C0AGENTS
//	    approvers: {usergroups: [S0DEVS]}
//	    auto_approve: "true"
//	  - name: writes
//	    when: {tools: ["github__*", "Bash", "Edit", "Write", "mcp__*"]}
//	    channel: C0AGENTS
//	    approvers: {usergroups: [S0DEVS]}
//	    timeout: 30m
//
// # Replicas and retries
//
// The server is stateless (StreamableHTTPOptions.Stateless): no MCP
// session lives in one replica's memory, so any replica answers any
// request, and GET and DELETE on /mcp answer 405 (there is no session to
// stream to or end). The SDK (v1.8.0) speaks protocol revisions 2024-11-05
// to 2026-07-28; clients of 2026-07-28 send their clientInfo with every
// request, older ones only in initialize, which a stateless server does
// not keep: the card then shows the client's User-Agent.
//
// A retried call reaches the request of the first attempt through the
// idempotency keys the HTTP API uses (Store.ClaimIdempotency, per API key,
// with a fingerprint of the call so a key reused for another call is
// refused), not through a token derived from the call: resume tokens stay
// random (they authorize decisions in Slack's buttons), and the key's
// lifetime follows the request's record. The key is, in order:
//
//   - the client's, in the call's _meta as "slackbot/idempotency_key"
//     (IdempotencyMetaKey) or in an Idempotency-Key header: kept as long
//     as the request, so a retry after a lost answer gets the recorded
//     decision; an approved upstream call runs at most once, and a later
//     retry is told it already ran;
//   - approval_prompt's tool_use_id, likewise (a retry gets the same
//     allow or deny);
//   - else none: every call is a request of its own. The JSON-RPC id is
//     never a key: each connection numbers its requests from the same
//     start, so two clients of one API key making the same call would
//     share one card, and the second be told it already ran.
//
// Each waiting call clears the HTTP server's write deadline (90 s, sized
// for /v1's long polls); a proxy in front must allow long responses too
// (the progress notifications keep the stream busy).
package mcpgateway
