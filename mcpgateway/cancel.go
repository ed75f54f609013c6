package mcpgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/slackapprove/slackbot/approval"
)

// An MCP client gives up on a call by sending notifications/cancelled,
// naming the call's JSON-RPC id, in a POST of its own (the TypeScript
// SDK does when the caller's AbortSignal fires, and keeps the call's
// stream open). The SDK cancels calls by id within one session, but the
// gateway is stateless: the cancel gets a session of its own, perhaps on
// another replica. So each waiting tools/call tracks its id in Redis
// (RequestIDs, per API key) for its request's lifetime, and a cancel
// reaching any replica cancels the requests tracked under its id through
// approval.Service.Cancel, as a client that goes away does: the card says
// so, the waiting call returns through the wake-up of its wait, and a
// later click decides nothing.

// maxRequestID bounds a JSON-RPC id the gateway tracks (ids are the
// client's choice): a tools/call with a longer one is refused, a cancel
// naming one is ignored.
const maxRequestID = 200

// errRequestID refuses a call whose id could not be tracked.
var errRequestID = errors.New("the JSON-RPC id of this call is longer than 200 bytes, so the call could not be cancelled: nothing was run and nobody was asked")

// requestID is a JSON-RPC id in one form, whatever its spelling: a
// string as Go's encoder writes it (so "9" and 9 differ), an integer in
// decimal. It returns "" for anything else (null, an object), and for an
// id longer than maxRequestID.
func requestID(raw json.RawMessage) string {
	if len(raw) == 0 || len(raw) > 2*maxRequestID {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return ""
	}
	var id string
	switch v := v.(type) {
	case string:
		b, _ := json.Marshal(v)
		id = string(b)
	case json.Number:
		id = v.String()
		if n, err := v.Int64(); err == nil {
			id = strconv.FormatInt(n, 10)
		}
	}
	if len(id) > maxRequestID {
		return ""
	}
	return id
}

// requestIDOf returns the client and the JSON-RPC id (requestID's form)
// of the tools/call that ctx serves; the id is "" when it is unknown (one
// message of a batch): such a call is not tracked. A call with an id
// past the bound is refused (errRequestID).
func requestIDOf(ctx context.Context) (client, id string, err error) {
	ri, ok := infoFrom(ctx)
	if !ok || ri.rpcID == "" {
		return "", "", nil
	}
	if id = requestID(json.RawMessage(ri.rpcID)); id == "" {
		return "", "", errRequestID
	}
	return ri.client.Name, id, nil
}

// trackRequestID ties the request of token to the JSON-RPC id of the
// tools/call that waits on it, until expires (a provisional minute while
// the request is opened; then its deadline), and reports whether a cancel
// of that id came meanwhile.
func (h *Handler) trackRequestID(ctx context.Context, token string, expires time.Time) (cancelled bool, err error) {
	client, id, err := requestIDOf(ctx)
	if err != nil || id == "" {
		return false, err
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return h.cfg.Store.TrackRequestID(tctx, client, id, token, expires)
}

// untrackRequestID forgets what trackRequestID recorded: the call
// returned.
func (h *Handler) untrackRequestID(ctx context.Context, token string) {
	client, id, err := requestIDOf(ctx)
	if err != nil || id == "" {
		return
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := h.cfg.Store.UntrackRequestID(uctx, client, id, token); err != nil {
		h.log.WarnContext(ctx, "MCP gateway: untrack the JSON-RPC id of a call", "err", err)
	}
}

// cancelNamed cancels, for client, the waiting calls that the
// notifications/cancelled in body (a message or a batch) name, before the
// SDK answers the POST: when the client hears 202, the requests are
// cancelled. An id nobody waits on is ignored.
func (h *Handler) cancelNamed(ctx context.Context, c Client, body []byte) {
	for _, id := range cancelledIDs(body) {
		h.cancelRequestID(ctx, c, id)
	}
}

// cancelledIDs returns the ids that the notifications/cancelled in body
// name, in requestID's form.
func cancelledIDs(body []byte) []string {
	type cancelMsg struct {
		Method string `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	body = bytes.TrimSpace(body)
	if !bytes.Contains(body, []byte("notifications/cancelled")) {
		return nil
	}
	var msgs []cancelMsg
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &msgs) != nil {
			return nil
		}
	} else {
		var m cancelMsg
		if json.Unmarshal(body, &m) != nil {
			return nil
		}
		msgs = []cancelMsg{m}
	}
	var ids []string
	for _, m := range msgs {
		if m.Method != "notifications/cancelled" {
			continue
		}
		if id := requestID(m.Params.RequestID); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// cancelRequestID cancels client's requests waiting under id. A request
// still being opened is cancelled by its own call, which sees the mark
// (trackRequestID); one that ended meanwhile stays as it ended.
func (h *Handler) cancelRequestID(ctx context.Context, c Client, id string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	tokens, err := h.cfg.Store.CancelRequestID(cctx, c.Name, id)
	if err != nil {
		h.log.ErrorContext(ctx, "MCP gateway: look up a cancelled call", "err", err)
		return
	}
	for _, token := range tokens {
		_, err := h.cfg.Approvals.Cancel(cctx, token, approval.Decider{Client: c.Name})
		if err != nil && approval.ErrorCode(err) == approval.EINTERNAL {
			h.log.ErrorContext(ctx, "MCP gateway: cancel a call its client cancelled", "err", err)
		}
	}
}

// withdraw ends the request of a call that no retry can reach (it has no
// idempotency key) when the gateway stops waiting for it at shutdown, so
// that its card does not keep buttons that would decide nothing.
func (h *Handler) withdraw(ctx context.Context, token string) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, err := h.cfg.Approvals.Fail(wctx, token, "slackbot restarted while the call waited; its client was told to call again")
	if err != nil && approval.ErrorCode(err) == approval.EINTERNAL {
		h.log.ErrorContext(ctx, "MCP gateway: withdraw the request of a call nobody waits for", "err", err)
	}
}
