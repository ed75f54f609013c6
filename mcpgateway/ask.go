package mcpgateway

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/mcptools"
	"github.com/slackapprove/slackbot/approval"
)

// IdempotencyMetaKey is the _meta key of a tools/call whose value (a
// string of at most 200 bytes) names the call for retries: a call made
// again with the same key, by the same API client, gets the first call's
// decision instead of a second card. The Idempotency-Key HTTP header does
// the same.
const IdempotencyMetaKey = "slackbot/idempotency_key"

const maxIdempotencyKey = 200

// errStopping ends a wait when the gateway shuts down: the request stays
// pending for the client's retry on another replica.
var errStopping = errors.New("slackbot is restarting")

// ask is one call that waits for a decision.
type ask struct {
	client Client
	// shown is who asked, as the card shows it: the key's name and the
	// MCP client.
	shown string
	// call is the approval call: its tool_name is what routes match.
	call agentrunner.ToolCallPart
	// meta is the call's request metadata (policies see it).
	meta map[string]any
	// key identifies the call for retries when explicit: the client (or
	// the prompt's tool_use_id) chose it, and it outlives the answer.
	// Without one, every call is a request of its own.
	key      string
	explicit bool
	req      *mcp.CallToolRequest
}

// decision is how an ask ended: the request and its one call, or the
// tool error the client gets instead.
type decision struct {
	rec    *approval.Request
	call   *approval.Call
	failed *mcp.CallToolResult
}

// decide opens the call through the one pipeline (policies, grants, a
// card) unless a request for the same key exists, and waits for it to end.
func (h *Handler) decide(ctx context.Context, a ask) decision {
	if _, _, err := requestIDOf(ctx); err != nil {
		return refused(err.Error())
	}
	token := agentrunner.NewToken()
	key, first := "", true
	if a.explicit {
		fp := fingerprint(a.call)
		key = "mcp:" + digest(a.key)
		// The claim lasts a minute until the record exists; then as long as
		// the record (KeepIdempotency in open).
		got, claimed, err := h.cfg.Store.ClaimIdempotency(ctx, a.client.Name, key, token, fp, time.Minute)
		if err != nil {
			return h.internal(ctx, "claim the idempotency key", err)
		}
		if !claimed {
			if got.Fingerprint != fp {
				return refused("This idempotency key was already used for a different tool call; use a new key for a new call.")
			}
			token, first = got.Token, false
		}
	}
	// Tracked before the request exists, so that a cancel that comes
	// while it is opened is not lost (see wait).
	if _, err := h.trackRequestID(ctx, token, time.Now().Add(time.Minute)); err != nil {
		return h.internal(ctx, "track the call's JSON-RPC id", err)
	}
	defer h.untrackRequestID(ctx, token)
	if first {
		if err := h.open(ctx, a, token, key); err != nil {
			return h.openFailed(ctx, err)
		}
	}
	rec, err := h.wait(ctx, a, token)
	switch {
	case errors.Is(err, errStopping) && !a.explicit:
		h.withdraw(ctx, token)
		return refused("slackbot is restarting and stopped waiting for this call's decision, so its card was withdrawn; call the tool again to ask again.")
	case errors.Is(err, errStopping):
		return refused("slackbot is restarting and stopped waiting for this call's decision; call the tool again with the same arguments to get it (no second approval is asked).")
	case errors.Is(err, approval.ErrNotFound) && !first:
		return refused("A request for this call is still being created; call the tool again in a moment.")
	case err != nil:
		return decision{failed: toolError("slackbot stopped waiting for a decision: " + err.Error())}
	}
	if len(rec.Calls) != 1 {
		return h.internal(ctx, "read the decision", fmt.Errorf("the request has %d calls, want 1", len(rec.Calls)))
	}
	return decision{rec: rec, call: &rec.Calls[0]}
}

// open opens the request under token for the client, counted against
// its quota, as the HTTP API does (approval.OpenForClient).
func (h *Handler) open(ctx context.Context, a ask, token, key string) error {
	req := agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{a.call}}
	if a.meta != nil {
		req.Metadata = map[string]map[string]any{a.call.ToolCallID: a.meta}
	}
	return approval.OpenForClient(ctx, h.cfg.Approvals, h.cfg.Store, h.cfg.Quota, approval.Opening{
		Token: token, Requests: req,
		Origin:        approval.Origin{Client: a.client.Name, Name: a.shown},
		AllowedRoutes: a.client.Routes,
	}, key)
}

// openFailed is the tool error of a call that could not be opened.
func (h *Handler) openFailed(ctx context.Context, err error) decision {
	var rl *approval.RateLimitError
	switch code := approval.ErrorCode(err); {
	case errors.As(err, &rl):
		return refused(fmt.Sprintf("Rate limited: this API key has too many requests open or is opening them too fast (%s); retry after %s.",
			rl.Limit, rl.RetryAfter.Round(time.Second)))
	case code == approval.EFORBIDDEN, code == approval.ENOROUTE, code == approval.EINVALID, code == approval.ERATELIMITED:
		return refused(approval.ErrorMessage(err))
	}
	return h.internal(ctx, "open the request", err)
}

// wait waits for the request to end, sending progress notifications, and
// bounded by ctx (the client's request) and the request's deadline. A
// client that goes away while waiting cancels the request; a gateway that
// shuts down leaves it pending (errStopping).
func (h *Handler) wait(ctx context.Context, a ask, token string) (*approval.Request, error) {
	ctx, gone := h.clientGone(ctx)
	defer gone()
	// Read on a context of its own: a client that went away while the
	// request was opened must still cancel it.
	gctx, gcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	rec, err := h.cfg.Approvals.Get(gctx, token)
	gcancel()
	if err != nil || rec.State != approval.StatePending {
		return rec, err
	}
	if ctx.Err() != nil {
		h.cancel(ctx, a, token)
		return nil, ctx.Err()
	}
	// The request exists: its JSON-RPC id is tracked as long as it may
	// wait, and a cancel that came while it was opened ends it now.
	if cancelled, err := h.trackRequestID(ctx, token, rec.ExpiresAt); cancelled || err != nil {
		if err != nil {
			h.log.ErrorContext(ctx, "MCP gateway: track the call's JSON-RPC id; the call is cancelled", "err", err)
		}
		h.cancel(ctx, a, token)
	}
	wctx, cancel := context.WithDeadlineCause(ctx, rec.ExpiresAt.Add(time.Minute), context.DeadlineExceeded)
	defer cancel()
	wctx, stop := context.WithCancelCause(wctx)
	defer stop(nil)
	go func() {
		select {
		case <-h.stopping:
			stop(errStopping)
		case <-wctx.Done():
		}
	}()
	if tok := a.req.Params.GetProgressToken(); tok != nil {
		go h.progress(wctx, a.req.Session, tok, rec)
	}
	done, err := h.cfg.Waiter.Await(wctx, token)
	switch {
	case err == nil:
		return done, nil
	case context.Cause(wctx) == errStopping:
		return nil, errStopping
	case ctx.Err() != nil:
		h.cancel(ctx, a, token)
		return nil, ctx.Err()
	case wctx.Err() != nil:
		// Past the deadline with no end seen: read where it stands.
		return h.cfg.Approvals.Get(context.WithoutCancel(ctx), token)
	}
	return nil, err
}

// clientGone returns ctx, also done when the HTTP request that carries
// the call ends: the client went away. The SDK ties a stateless call's
// handler to its HTTP request only for clients of protocol revision
// 2026-07-28 (PropagateRequestCancellation); older ones, the TypeScript
// SDK's among them, would otherwise wait on with nobody listening. A
// connection that ends because the gateway shuts down is not the client
// going away (see Close).
func (h *Handler) clientGone(ctx context.Context) (context.Context, context.CancelFunc) {
	ri, ok := infoFrom(ctx)
	if !ok || ri.http == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(ri.http, func() {
		select {
		case <-h.stopping:
		default:
			cancel(context.Cause(ri.http))
		}
	})
	return ctx, func() { stop(); cancel(nil) }
}

// cancel cancels the request of a client that went away or cancelled
// the call, so the card says so and no one decides a call nobody waits
// for.
func (h *Handler) cancel(ctx context.Context, a ask, token string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := h.cfg.Approvals.Cancel(cctx, token, approval.Decider{Client: a.client.Name})
	if err != nil && approval.ErrorCode(err) == approval.EINTERNAL {
		h.log.ErrorContext(ctx, "MCP gateway: cancel the request of a client that went away", "err", err)
	}
}

// progress tells the client, every ProgressEvery, that the call still
// waits and for how long it may.
func (h *Handler) progress(ctx context.Context, ss *mcp.ServerSession, tok any, rec *approval.Request) {
	if ss == nil {
		return
	}
	t := time.NewTicker(h.cfg.ProgressEvery)
	defer t.Stop()
	total := rec.ExpiresAt.Sub(rec.CreatedAt).Seconds()
	waited := 0.0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		waited += h.cfg.ProgressEvery.Seconds()
		msg := fmt.Sprintf("Waiting for a person to decide in Slack (%s of at most %s).",
			(time.Duration(waited) * time.Second).String(), (time.Duration(total) * time.Second).String())
		err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: waited, Total: total, Message: msg})
		if err != nil && ctx.Err() == nil {
			h.log.DebugContext(ctx, "MCP gateway: progress notification", "err", err)
		}
	}
}

// outcome says how a decided call ends for the client: approved (with
// the arguments to run), or the text of the tool error. A call its own
// API key approved (through the HTTP API, on a route that lets the
// requester approve) is not approved here: the key is the agent's, and
// the gateway stands between the agent and the tool, so it acts only on
// an approval by a person, a policy or a grant.
func outcome(rec *approval.Request, c *approval.Call) (approved bool, args json.RawMessage, reason string) {
	if c.Status == approval.CallApproved && c.ByClient {
		return false, nil, fmt.Sprintf("slackbot did not run this call: the API key %q that asked for it approved it itself, "+
			"and the MCP gateway acts only on an approval by a person, a policy or a grant.", rec.Origin.Client)
	}
	if c.Status == approval.CallApproved {
		if o := c.OverrideArgs; len(o) > 0 {
			return true, o, ""
		}
		call, _ := rec.Requests.Call(c.ID)
		args, err := call.ArgsObject()
		if err != nil {
			args = call.Args
		}
		return true, args, ""
	}
	if nd := rec.NoDecision(); nd != nil && !c.Decided() {
		return false, nil, nd.Error()
	}
	if why := c.Reason; why != "" {
		return false, nil, why
	}
	return false, nil, agentrunner.DefaultDenialMessage
}

// receiptMeta is the _meta entry of approved call callID's receipt,
// {"slackbot_receipt": …}, or nil when its results carry none: what the
// upstream's request and the client's result both get. The results are
// handed out here, signed with Config.Receipts.
func (h *Handler) receiptMeta(rec *approval.Request, callID string) map[string]any {
	res := rec.Results(h.cfg.Receipts)
	if res == nil {
		return nil
	}
	return mcptools.ReceiptMeta(res.Metadata[callID])
}

// idempotencyKey is what names a call for retries: the client's key (the
// _meta entry or the Idempotency-Key header), else none. Never the
// JSON-RPC id: each connection numbers its requests from the same start,
// so two clients of one API key making the same call would share one
// request, and the second be told it already ran.
func idempotencyKey(req *mcp.CallToolRequest, _ *requestInfo, _ agentrunner.ToolCallPart) (key string, explicit bool, err error) {
	k, _ := req.Params.Meta[IdempotencyMetaKey].(string)
	if k == "" && req.Extra != nil {
		k = req.Extra.Header.Get("Idempotency-Key")
	}
	if len(k) > maxIdempotencyKey {
		return "", false, fmt.Errorf("the idempotency key is longer than %d bytes", maxIdempotencyKey)
	}
	if k != "" {
		return "key\x00" + k, true, nil
	}
	return "", false, nil
}

// fingerprint identifies a call by its tool and arguments.
func fingerprint(c agentrunner.ToolCallPart) string {
	return digest(c.ToolName + "\x00" + string(c.Args))
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// shownName is who asked, as the card shows it: the API key's name and
// the MCP client's clientInfo ("billing via Claude Code 1.0.3"), or its
// User-Agent when it did not say (a stateless request of an older
// protocol carries no clientInfo).
func shownName(req *mcp.CallToolRequest, ri *requestInfo) string {
	who := ""
	if ci := req.ClientInfo(); ci != nil {
		who = strings.TrimSpace(cmp.Or(ci.Title, ci.Name) + " " + ci.Version)
	}
	if who == "" {
		who, _, _ = strings.Cut(ri.userAgent, " ")
	}
	who = strings.Join(strings.Fields(who), " ")
	if len(who) > 100 {
		who = who[:100]
	}
	if who == "" {
		return ri.client.Name
	}
	return ri.client.Name + " via " + strings.ToValidUTF8(who, "")
}

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func refused(text string) decision { return decision{failed: toolError(text)} }

// internal logs an internal error and tells the client only that it
// happened.
func (h *Handler) internal(ctx context.Context, what string, err error) decision {
	h.log.ErrorContext(ctx, "MCP gateway: "+what, "err", err)
	return refused("slackbot could not ask for a decision (an internal error); try again later.")
}
