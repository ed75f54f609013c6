// Package httpapi is slackbot's HTTP API for agents in any language:
// an agent hands over the tool calls it may not run by itself, in Pydantic
// AI's DeferredToolRequests wire format, and gets the decisions people
// made in Slack back as DeferredToolResults.
//
//	POST   /v1/approvals                  create: route, post cards → 201 {token, status, expires_at, ...}
//	GET    /v1/approvals/{token}?wait=30s read, or long-poll (≤ 60 s) until it ends
//	POST   /v1/approvals/{token}/results  answer calls (external results, programmatic decisions)
//	DELETE /v1/approvals/{token}          cancel
//	GET    /v1/openapi.json               the OpenAPI 3.1 document (no key needed)
//
// Every route is in routes.go. The OpenAPI document (openapi.json,
// embedded as OpenAPI) is the reference for every field; the tests check
// every response against it. The handlers reach the domain and Redis only
// through the small interfaces of ports.go (Approvals, Store, Owners,
// IdempotencyKeys, Quotas, Waiter); the package never imports store.
//
// What the package keeps, whatever the handler:
//
//   - A client is known by its API key's NAME (ParseKeys, keys.go),
//     compared in constant time. It owns the tokens it creates; policies
//     see "api:<NAME>", never the free-text requester.
//   - Tokens are not probeable: GET, POST results and DELETE answer 404
//     not_found alike for a token that is unknown, malformed, long gone,
//     created from Slack, or another client's.
//   - Errors come from approval's codes through one table (errors.go):
//     {"error":{"code":"...","message":"..."}}, stable codes, internal
//     errors logged once and never detailed.
//   - A key approves its own approvals only on routes with
//     allow_self_approval; such an approval carries no receipt.
//   - Bodies are bounded (MaxBodyBytes, MaxCalls), and callback URLs reach
//     only public addresses, checked when the request is made and again
//     when dialling (ssrf.go).
//   - Callbacks are queued by the script that ends a token, so exactly one
//     delivery sequence starts per end, signed with a secret derived from
//     the client's key (VerifyCallback checks it).
//
// The API's contract for clients (keys, error codes, the create body,
// idempotency, long polls, callback signatures and retries) is in
// docs/OPERATIONS.md ("The HTTP API").
package httpapi
