package mcpgateway

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
	"github.com/slackapprove/slackbot/approval"
)

// Client is an authenticated API client: the name of its API_KEYS entry
// and the routes it is restricted to (nil: any).
type Client struct {
	Name   string
	Routes []string
}

// Authenticator returns the API client whose bearer key the request
// carries, comparing keys in constant time; false when there is none or it
// is not a configured key. cmd/slackbot hands in the HTTP API's key ring,
// so /v1 and /mcp accept the same keys without either door importing the
// other.
type Authenticator func(r *http.Request) (Client, bool)

// Approvals is the approval pipeline; *approval.Service implements it.
type Approvals interface {
	// Open routes, applies policies and grants, records the request and
	// posts its cards (approval.Service.Open).
	Open(ctx context.Context, o approval.Opening) (*approval.Request, error)
	// MayCall returns nil if a client restricted to the routes allowed
	// (nil: any) may call tool, else EFORBIDDEN saying why
	// (approval.Service.MayCall).
	MayCall(tool string, allowed []string) error
	// Get returns the request of token, or ENOTFOUND.
	Get(ctx context.Context, token string) (*approval.Request, error)
	// Cancel ends the client's pending request; the cards say by whom.
	Cancel(ctx context.Context, token string, by approval.Decider) (*approval.Request, error)
	// Fail ends a request whose opening failed after it was recorded.
	Fail(ctx context.Context, token, reason string) (*approval.Request, error)
	// SetOutcome records what the approved call's tool did and shows it on
	// the card.
	SetOutcome(ctx context.Context, token, callID string, o approval.Outcome) error
}

// Waiter blocks until a request ends; *store.Tokens implements it.
type Waiter interface {
	// Await returns the request once it ended, approval.ErrNotFound if it
	// is unknown, or ctx's error.
	Await(ctx context.Context, token string) (*approval.Request, error)
}

// Store keeps, across replicas, what the gateway needs beside the
// requests: idempotency keys (a retried call finds its request), each
// client's quota (the first five methods are httpapi.Store's too), the
// audit of the calls made upstream, and the JSON-RPC ids of waiting calls.
// *store.Store implements it.
type Store interface {
	ClaimIdempotency(ctx context.Context, client, key, token, fingerprint string, ttl time.Duration) (got approval.Idempotency, first bool, err error)
	KeepIdempotency(ctx context.Context, client, key, token string) error
	ReleaseIdempotency(ctx context.Context, client, key, token string) error
	TakeQuota(ctx context.Context, client, token string, expires time.Time, q approval.Quota) error
	ReleaseQuota(ctx context.Context, client, token string) error
	// AuditUpstreamCall records a call made upstream on a client's behalf
	// in the audit stream.
	AuditUpstreamCall(ctx context.Context, c approval.UpstreamCall) error
	RequestIDs
}

// RequestIDs ties, across replicas, the JSON-RPC id of each waiting
// tools/call to its request, so that a client's notifications/cancelled,
// which names only the id and may reach any replica, cancels it.
// *store.Store implements it; ids are per API client.
type RequestIDs interface {
	// TrackRequestID records that rpcID waits on token's request until
	// expires (again: moves the expiry), and reports whether a cancel of
	// rpcID came since it was first tracked.
	TrackRequestID(ctx context.Context, client, rpcID, token string, expires time.Time) (cancelled bool, err error)
	// UntrackRequestID forgets token under rpcID.
	UntrackRequestID(ctx context.Context, client, rpcID, token string) error
	// CancelRequestID marks the requests tracked under rpcID cancelled
	// and returns their tokens.
	CancelRequestID(ctx context.Context, client, rpcID string) ([]string, error)
}

// Upstream is the upstream MCP servers' tools; *mcptools.Toolset
// implements it (the Toolset the agent runner uses, so one connection per
// server serves both).
type Upstream interface {
	// Offered returns the current tools, named "<server>__<tool>".
	Offered() []*mcptools.OfferedTool
	// Changed is closed when Offered next changes.
	Changed() <-chan struct{}
	// Reachable returns nil if the server answers now.
	Reachable(ctx context.Context, server string) error
	// CallTool calls an offered tool, with meta as the request's _meta,
	// and returns the server's result as is.
	CallTool(ctx context.Context, name string, args json.RawMessage, meta map[string]any) (*mcp.CallToolResult, error)
}
