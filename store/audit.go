package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/approval"
)

// AuditType says what an audit event records.
type AuditType string

// Audit event types. The token scripts write requested, voted, decided,
// refused (for clicks the store itself refuses), resolved, expired,
// cancelled and failed atomically with the change they record; the bot
// writes refused (for clicks it refuses, e.g. unauthorized) with
// Refused and tool outcomes with AuditToolOutcome.
const (
	AuditRequested   AuditType = "requested"
	AuditVoted       AuditType = "voted"
	AuditDecided     AuditType = "decided"
	AuditRefused     AuditType = "refused"
	AuditResolved    AuditType = "resolved"
	AuditExpired     AuditType = "expired"
	AuditCancelled   AuditType = "cancelled"
	AuditFailed      AuditType = "failed"
	AuditToolOutcome AuditType = "tool_outcome"
)

// AuditEvent is one entry of the audit stream. Fields that do not apply
// are empty.
type AuditEvent struct {
	// ID is the stream entry id; it orders events. Ignored when writing.
	ID    string
	Type  AuditType
	At    time.Time
	Token string
	RunID string
	// CallID and Tool name the call concerned.
	CallID string
	Tool   string
	// By is who acted: a Slack user id, "policy:<route>", an API client,
	// or the requester for "requested".
	By string
	// Decision is the call's state after a decision (approved, denied,
	// answered, failed), "approve" for a vote, what was attempted for a
	// refusal, the call's kind for "requested", the outcome for a tool.
	Decision string
	// Args are the call's original arguments; Override the arguments an
	// approver substituted.
	Args     string
	Override string
	// ArgsSHA256 is the receipt's args_sha256 of the arguments a call ran
	// with, where the event records one (an upstream call).
	ArgsSHA256 string
	// Route is the routing rule of a requested call.
	Route string
	// Reason says why: a denial message, a refusal's cause, why a token
	// ended.
	Reason string
	// Code is the approval error code of a refusal the bot wrote
	// (approval.ENOTAPPROVER, ...).
	Code string
	// Detail holds an answer, a result, or a tool's output.
	Detail string
	// StepUp, AMR and Cred are, for an approval (a vote or a decision)
	// made with a step-up proof, its method ("webauthn", "totp"), its
	// RFC 8176 method references (space-separated: "hwk", "otp") and the
	// credential id (base64url WebAuthn credential id, or "totp").
	StepUp, AMR, Cred string
}

// auditValueMax caps each value of an audit event, in bytes: arguments of
// up to 1 MiB would otherwise make the stream, capped by entries
// (Options.AuditMaxLen), unbounded in bytes. The token scripts' capped()
// uses the same number. A value cut keeps a valid UTF-8 prefix and ends
// with a marker giving its full length ("…[truncated: N bytes]"); the
// record keeps the whole value for its lifetime.
const auditValueMax = 8 << 10

// capAudit cuts v as the token scripts' capped() does.
func capAudit(v string) string {
	if len(v) <= auditValueMax {
		return v
	}
	n := auditValueMax
	for n > 0 && v[n] >= 0x80 && v[n] < 0xC0 {
		n--
	}
	return v[:n] + "…[truncated: " + strconv.Itoa(len(v)) + " bytes]"
}

// Audit appends ev to the audit stream (capped at Options.AuditMaxLen,
// approximately; each value capped at 8 KiB). A zero At means now.
func (s *Store) Audit(ctx context.Context, ev AuditEvent) error {
	if ev.At.IsZero() {
		ev.At = s.now()
	}
	values := []any{"type", string(ev.Type), "at", ms(ev.At)}
	for _, f := range []struct{ k, v string }{
		{"token", ev.Token}, {"run", ev.RunID}, {"call", ev.CallID}, {"tool", ev.Tool},
		{"by", ev.By}, {"decision", ev.Decision}, {"args", ev.Args}, {"override", ev.Override}, {"args_sha256", ev.ArgsSHA256},
		{"route", ev.Route}, {"reason", ev.Reason}, {"code", ev.Code}, {"detail", ev.Detail},
		{"stepup", ev.StepUp}, {"amr", ev.AMR}, {"cred", ev.Cred},
	} {
		if f.v != "" {
			values = append(values, f.k, capAudit(f.v))
		}
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: s.auditKey(), MaxLen: s.opts.AuditMaxLen, Approx: true, Values: values})
		p.PExpire(ctx, s.auditKey(), s.opts.Retention)
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit %s: %w", ev.Type, err)
	}
	return nil
}

// Refused records an attempt to decide that was refused (e.g. the user
// may not approve) and changed nothing: code is its approval error code,
// reason what the person was told.
func (s *Store) Refused(ctx context.Context, token, callID, by, code, reason string) error {
	return s.Audit(ctx, AuditEvent{Type: AuditRefused, Token: token, CallID: callID, By: by, Code: code, Reason: reason})
}

// Note records an event about a call in the audit stream (approval.Store):
// "reminded", "escalated", "escalation_decided", with detail.
func (s *Store) Note(ctx context.Context, token, callID, event, detail string) error {
	return s.Audit(ctx, AuditEvent{Type: AuditType(event), Token: token, CallID: callID, Detail: detail})
}

// AuditToolOutcome records what a call did once it ran (or why it did
// not): outcome is e.g. "success", "failed", "denied"; detail its output
// or error.
func (s *Store) AuditToolOutcome(ctx context.Context, token, runID, callID, tool, outcome, detail string) error {
	return s.Audit(ctx, AuditEvent{Type: AuditToolOutcome, Token: token, RunID: runID, CallID: callID, Tool: tool, Decision: outcome, Detail: detail})
}

// ReadAudit returns up to count audit events (all when count <= 0) that
// come after the event with id after, oldest first; an empty after starts
// at the oldest event kept. Page by passing the last ID returned.
func (s *Store) ReadAudit(ctx context.Context, after string, count int64) ([]AuditEvent, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	var msgs []redis.XMessage
	var err error
	if count > 0 {
		msgs, err = s.rdb.XRangeN(ctx, s.auditKey(), start, "+", count).Result()
	} else {
		msgs, err = s.rdb.XRange(ctx, s.auditKey(), start, "+").Result()
	}
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	out := make([]AuditEvent, len(msgs))
	for i, m := range msgs {
		str := func(k string) string { v, _ := m.Values[k].(string); return v }
		at, _ := strconv.ParseInt(str("at"), 10, 64)
		out[i] = AuditEvent{
			ID:       m.ID,
			Type:     AuditType(str("type")),
			At:       time.UnixMilli(at),
			Token:    str("token"),
			RunID:    str("run"),
			CallID:   str("call"),
			Tool:     str("tool"),
			By:       str("by"),
			Decision: str("decision"),
			Args:     str("args"),
			Override: str("override"),
			Route:    str("route"),
			Reason:   str("reason"),
			Code:     str("code"),
			Detail:   str("detail"),
			StepUp:   str("stepup"),
			AMR:      str("amr"),
			Cred:     str("cred"),
		}
		out[i].ArgsSHA256 = str("args_sha256")
	}
	return out, nil
}

// AuditPolicy implements approval.Store: a decision a routing policy made
// on a run's call, written to the audit stream like a person's.
func (s *Store) AuditPolicy(ctx context.Context, d approval.PolicyDecision) error {
	args, _ := d.Call.ArgsObject()
	return s.Audit(ctx, AuditEvent{
		Type: AuditDecided, RunID: d.RunID, CallID: d.Call.ToolCallID, Tool: d.Call.ToolName,
		By: d.By, Decision: d.Decision, Args: string(args), Reason: d.Reason,
	})
}

// AuditCallback is the audit type of one attempt to deliver a token's
// callback (see Store.AuditCallback).
const AuditCallback AuditType = "callback"

// CallbackAttempt is one attempt to deliver a token's callback, for the
// audit stream.
type CallbackAttempt = approval.CallbackAttempt

// AuditCallback records a callback attempt in the audit stream: type
// "callback", By the client, Decision the outcome, Reason the error, and
// Detail "attempt N" plus ", HTTP <status>" when the receiver answered.
func (s *Store) AuditCallback(ctx context.Context, a CallbackAttempt) error {
	detail := "attempt " + strconv.Itoa(a.Attempt)
	if a.Status != 0 {
		detail += ", HTTP " + strconv.Itoa(a.Status)
	}
	return s.Audit(ctx, AuditEvent{Type: AuditCallback, Token: a.Token, By: a.Client, Decision: a.Outcome, Reason: a.Error, Detail: detail})
}

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
