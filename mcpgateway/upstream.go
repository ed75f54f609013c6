package mcpgateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/mcptools"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/receipt"
)

// handleUpstream serves tools/call of one upstream tool: the client's
// routes, the arguments against its schema and its server's reachability
// checked first (a clear tool error, and no card, otherwise); a read-only
// tool proxied at once, within the client's rate;
// any other call opened through the approval pipeline, waited for, and
// proxied with the approved (possibly edited) arguments.
func (h *Handler) handleUpstream(o *mcptools.OfferedTool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ri, ok := infoFrom(ctx)
		if !ok {
			return nil, fmt.Errorf("mcpgateway: request not authenticated")
		}
		if refused := h.mayCall(ri.client, o.Tool.Name); refused != nil {
			return refused, nil
		}
		args, err := o.ValidateArgs(rawArgs(req))
		if err != nil {
			return toolError(err.Error() + ". Nothing was run and nobody was asked."), nil
		}
		if o.ReadOnly {
			if refused := h.admitReadOnly(ctx, ri.client); refused != nil {
				return refused, nil
			}
			return h.proxy(ctx, upstreamCall{client: ri.client, tool: o.Tool.Name, args: args}), nil
		}
		// Nobody is asked to approve a call that could not run.
		if err := h.cfg.Upstream.Reachable(ctx, o.Server); err != nil {
			return toolError(err.Error() + ". Nothing was run and nobody was asked."), nil
		}
		call := agentrunner.ToolCallPart{ToolName: o.Tool.Name, Args: args, ToolCallID: "mcp_" + agentrunner.NewToken()[:16]}
		key, explicit, err := idempotencyKey(req, ri, call)
		if err != nil {
			return toolError(err.Error()), nil
		}
		d := h.decide(ctx, ask{client: ri.client, shown: shownName(req, ri), call: call, key: key, explicit: explicit, req: req})
		if d.failed != nil {
			return d.failed, nil
		}
		approved, runArgs, reason := outcome(d.rec, d.call)
		if !approved {
			return toolError(reason), nil
		}
		return h.run(ctx, ri.client, d, o.Tool.Name, runArgs), nil
	}
}

// run calls an approved tool upstream (the receipt in the request's
// _meta), at most once per request however often the client retries it,
// records its outcome on the card, and returns the upstream result as is,
// with the receipt in its _meta.
func (h *Handler) run(ctx context.Context, c Client, d decision, name string, args json.RawMessage) *mcp.CallToolResult {
	token, id := d.rec.Token, d.call.ID
	_, first, err := h.cfg.Store.ClaimIdempotency(ctx, c.Name, "mcp-ran:"+digest(token+"/"+id), token, "ran", 8*24*time.Hour)
	if err != nil {
		return h.internal(ctx, "claim the run of an approved call", err).failed
	}
	if !first {
		return toolError("This call was approved and has already run for an earlier request with the same idempotency key; it does not run twice.")
	}
	// The upstream runs the tool: it gets the receipt too, to verify the
	// approval itself.
	meta := h.receiptMeta(d.rec, id)
	res := h.proxy(ctx, upstreamCall{client: c, tool: name, args: args, meta: meta, token: token, callID: id})
	o := approval.Outcome{Status: "ran", Summary: summary(res)}
	if res.IsError {
		o.Status = "failed"
	}
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := h.cfg.Approvals.SetOutcome(octx, token, id, o); err != nil {
		h.log.WarnContext(ctx, "MCP gateway: record the outcome", "err", err)
	}
	attachReceipt(res, meta)
	return res
}

// attachReceipt puts the approved call's receipt, meta (receiptMeta), when
// there is one, in the result's _meta as "slackbot_receipt", beside what
// the upstream put there.
func attachReceipt(res *mcp.CallToolResult, meta map[string]any) {
	if meta == nil {
		return
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	maps.Copy(res.Meta, meta)
}

// ReceiptMetaKey is the _meta key of an approved call's result that holds
// its receipt (a compact JWS; see docs/ARCHITECTURE.md, "The data
// model"), as the results' metadata names it.
const ReceiptMetaKey = receipt.MetadataKey

// upstreamCall is one call the gateway makes upstream for a client: a
// read-only one, or an approved one (its request's token and call), with
// meta as the request's _meta.
type upstreamCall struct {
	client        Client
	tool          string
	args          json.RawMessage
	meta          map[string]any
	token, callID string
}

// proxy calls the upstream tool, records the call in the audit stream
// (the key, the tool, the digest of the arguments as a receipt computes
// it, the outcome) and returns the result as it came; a server out of
// reach becomes a tool error saying so.
func (h *Handler) proxy(ctx context.Context, u upstreamCall) *mcp.CallToolResult {
	res, err := h.cfg.Upstream.CallTool(ctx, u.tool, u.args, u.meta)
	rec := approval.UpstreamCall{Client: u.client.Name, Tool: u.tool, Args: string(u.args), Token: u.token, CallID: u.callID}
	// Arguments with no canonical form (inexact numbers) have no digest;
	// the audit still has them as sent.
	rec.ArgsSHA256, _ = receipt.ArgsSHA256(u.args)
	switch {
	case err != nil:
		res = toolError(err.Error())
		rec.Outcome, rec.Detail = approval.UpstreamFailed, err.Error()
	case res.IsError:
		rec.Outcome, rec.Detail = approval.UpstreamToolError, summary(res)
	default:
		rec.Outcome, rec.Detail = approval.UpstreamOK, summary(res)
	}
	// Recorded even when the client went away meanwhile: the call ran.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := h.cfg.Store.AuditUpstreamCall(actx, rec); err != nil {
		h.log.ErrorContext(ctx, "MCP gateway: audit an upstream call", "tool", u.tool, "err", err)
	}
	return res
}

// summary is a short account of a result for the card's outcome line.
func summary(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			s := t.Text
			if len(s) > 200 {
				s = s[:200] + "…"
			}
			return s
		}
	}
	return ""
}

// rawArgs returns the call's arguments as sent; none is an empty object.
func rawArgs(req *mcp.CallToolRequest) json.RawMessage {
	if req.Params == nil || len(req.Params.Arguments) == 0 || string(req.Params.Arguments) == "null" {
		return json.RawMessage(`{}`)
	}
	return req.Params.Arguments
}
