package mcpgateway

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/approval"
)

// A key restricted to routes reaches only the upstream tools its routes
// match, read-only ones included: those run at once, with slackbot's
// credentials for their server, so a restriction that stopped at the
// tools needing approval would hand every read-only tool to every key.

// scoped is the MCP server's middleware that offers a client restricted
// to routes only the upstream tools it may call (approval.Service.MayCall):
// tools/list leaves the others out. A tools/call of one of them is refused
// by its handler (see mayCall), with a tool error saying why.
func (h *Handler) scoped(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		list, isList := res.(*mcp.ListToolsResult)
		ri, ok := infoFrom(ctx)
		if err != nil || !isList || !ok || ri.client.Routes == nil {
			return res, err
		}
		// A copy: the list may share the server's own slice.
		out := *list
		out.Tools = make([]*mcp.Tool, 0, len(list.Tools))
		for _, t := range list.Tools {
			if t.Name == PromptToolName || h.cfg.Approvals.MayCall(t.Name, ri.client.Routes) == nil {
				out.Tools = append(out.Tools, t)
			}
		}
		return &out, nil
	}
}

// mayCall returns the tool error of a call of an upstream tool the client
// may not reach, or nil.
func (h *Handler) mayCall(c Client, tool string) *mcp.CallToolResult {
	if err := h.cfg.Approvals.MayCall(tool, c.Routes); err != nil {
		return toolError(approval.ErrorMessage(err) + ". Nothing was run and nobody was asked.")
	}
	return nil
}

// admitReadOnly counts a read-only call against the client's rate
// (API_RATE, shared with the requests it opens here and through /v1) and
// returns the tool error of a call beyond it, or nil. A read-only call
// opens no request, but it runs upstream with slackbot's credentials, so a
// key makes no more of them than it may open requests. API_MAX_OPEN does
// not count them: they end as they run.
func (h *Handler) admitReadOnly(ctx context.Context, c Client) *mcp.CallToolResult {
	if h.cfg.Quota.Rate <= 0 {
		return nil
	}
	err := h.cfg.Store.TakeQuota(ctx, c.Name, "", time.Now(), approval.Quota{Rate: h.cfg.Quota.Rate})
	var rl *approval.RateLimitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rl):
		return h.openFailed(ctx, err).failed
	}
	h.log.ErrorContext(ctx, "MCP gateway: take the rate of a read-only call", "err", err)
	return toolError("slackbot could not count this call against the API key's rate (an internal error); nothing was run. Try again later.")
}
