package store

import (
	"context"

	"github.com/slackapprove/slackbot/approval"
)

// AuditUpstreamCall is the audit type of a call the MCP gateway made to an
// upstream MCP server (see Store.AuditUpstreamCall).
const AuditUpstreamCall AuditType = "upstream_call"

// AuditUpstreamCall records a call made to an upstream MCP server on an
// API client's behalf: By the client, Tool the tool as offered, Args and
// ArgsSHA256 what was sent, Decision the outcome (approval.UpstreamOK,
// UpstreamToolError, UpstreamFailed), Detail the start of the result or
// the error; Token and CallID for an approved call, empty for a read-only
// one.
func (s *Store) AuditUpstreamCall(ctx context.Context, c approval.UpstreamCall) error {
	return s.Audit(ctx, AuditEvent{
		Type: AuditUpstreamCall, Token: c.Token, CallID: c.CallID, Tool: c.Tool, By: c.Client,
		Decision: c.Outcome, Args: c.Args, ArgsSHA256: c.ArgsSHA256, Detail: c.Detail,
	})
}
