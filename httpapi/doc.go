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
// The OpenAPI document (openapi.json, embedded as OpenAPI) is the
// reference for every field; the tests check every response against it.
//
// # Keys
//
// API_KEYS holds comma-separated entries, each KEY, NAME=KEY or
// NAME=KEY@route1|route2 (see ParseKeys). Requests carry
// "Authorization: Bearer KEY". The presented key is hashed with SHA-256
// and compared with the digest of every configured key with
// crypto/subtle, so timing tells nothing about keys. A client is known by
// NAME (or "key<N>"): it owns the tokens it creates, its name is the
// default requester on the cards and who answered through the API, and
// policies see "api:<NAME>" as the requester — never the free-text
// requester field, which only people see. A key restricted to routes may
// only send calls to those routes (403 route_forbidden otherwise).
//
// # Tokens are not probeable
//
// GET, POST results and DELETE answer 404 not_found for a token that is
// unknown, malformed, long gone, created from Slack, or another client's:
// the answer is the same whatever the reason.
//
// # Errors
//
// Every error is {"error":{"code":"...","message":"..."}}. Codes are
// stable: unauthorized (401), invalid_request (400), route_forbidden
// (403), self_approval (403), not_found (404), method_not_allowed (405), conflict (409: the
// request already ended, a call was already decided, an idempotency key
// is taken by another body or still being created), payload_too_large
// (413: bodies are limited to 1 MiB), unsupported_media_type (415: send
// application/json), rate_limited (429, with Retry-After: the key has
// API_MAX_OPEN requests open, or creates them faster than API_RATE per
// second, in bursts of twice that; both counted in Redis across
// replicas), internal (500: logged once, details never sent).
// There is no 410: an ended request is read with GET (200) and answering
// or cancelling it is a conflict.
//
// # Creating
//
// The body is a DeferredToolRequests ("calls", "approvals", "metadata";
// Pydantic AI's extra fields inside tool calls are accepted) plus
// "route", "requester", "context", "timeout" (a duration such as "30m" or
// seconds, 1 s to 7 days; default the earliest timeout of the routes the
// calls go to), "callback_url" (https to a public address: loopback, private and link-local addresses are refused when the request is made and again when dialling, against SSRF; `slackbot dev` also allows http to localhost) and
// "idempotency_key". Any other top-level field is refused; at most 100
// calls. Calls are routed as for runs started from Slack (by tool name,
// with no source channel) unless "route" names one route for all of
// them, which must match each call's tool (its when.tools; otherwise 403
// route_forbidden, and nothing is recorded); the routes' auto_approve / auto_deny decide first, a call no route
// matches is denied at once (policy:none), and the rest get cards. The
// same idempotency_key (per client) with the same body returns the same
// token with 200 and Idempotent-Replayed: true; with another body, 409.
//
// # Answering
//
// POST .../results takes a DeferredToolResults. Every answer must name a
// call that is pending, under its kind (400 otherwise; 409 if it was
// decided meanwhile); the answers are recorded atomically, calls left out
// stay pending, and the token resolves when none is left. The key answers
// its calls (external results, answers to questions), but approves or
// denies its own approvals only on routes with allow_self_approval: true;
// otherwise the whole answer is refused with 403 self_approval, nothing
// is recorded, and each refused call is in the audit stream (type
// "refused", by the key's name). Where it may, its answer is
// authoritative (it meets a quorum at once, carries no receipt, and the
// view's calls[].by_client says so). DELETE cancels: every pending call
// ends with no decision, so a cancel never makes a call run.
//
// # Long polls
//
// GET with ?wait= blocks in the Waiter (store.Tokens.Await), which shares the one
// pub/sub connection of the process: ten thousand long polls hold ten
// thousand goroutines and no Redis connection. The answer comes as soon
// as the token ends (within milliseconds of the click) or when the wait
// is over, with status pending. Close ends the long polls at shutdown.
//
// # Callbacks
//
// When a token with a callback_url ends (resolved, expired, cancelled,
// failed), the Lua script that ends it queues a delivery on a Redis
// stream, so exactly one delivery sequence starts per end whichever
// replica ended it. Callbacks (one per replica, in a consumer group) POST
// the same JSON as GET returns, with headers
//
//	X-Slackbot-Timestamp: <unix seconds>
//	X-Slackbot-Signature: v1=<hex HMAC-SHA256(secret, timestamp + "." + body)>
//	X-Slackbot-Attempt:   <n>
//
// where secret = hex(HMAC-SHA256(key=<the client's API key>,
// message="slackbot-callback-v1")), the 64 hex characters used as ASCII
// bytes. To verify, recompute the signature over the raw body, compare in
// constant time, and refuse a timestamp more than five minutes from now
// (VerifyCallback does this). In Python:
//
//	secret = hmac.new(api_key.encode(), b"slackbot-callback-v1", hashlib.sha256).hexdigest()
//	mac = hmac.new(secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
//	ok = hmac.compare_digest("v1=" + mac, signature) and abs(time.time() - int(ts)) < 300
//
// A delivery is retried until the receiver answers 2xx, with exponential
// backoff and jitter (5 s doubling: 8 attempts over about 10 minutes);
// each attempt's outcome, status and error are in the audit stream (type
// "callback"). Attempts time out after 10 s, response bodies are ignored,
// and redirects are followed only within the same scheme and host.
package httpapi
