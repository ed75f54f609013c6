// Package mcpgateway is /mcp, the MCP approval gateway: an MCP server
// (the official Go SDK, streamable HTTP) that puts Slack approval in front
// of the upstream MCP servers of the routing file's mcp_servers, and
// offers approval_prompt, Claude Code's permission-prompt tool. Every
// call goes through approval.Service like every other door's: routes,
// policies and grants first, else a card.
//
// (Full user-facing notes: see the end of this comment.)
package mcpgateway
