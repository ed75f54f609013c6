// Package stepup serves slackbot's own web pages for step-up: the page
// where an approver proves, with a passkey (WebAuthn) or, where a route
// allows it, a one-time code (TOTP, RFC 6238), that they themself agreed
// to exactly one call, and the page where a person registers a passkey.
//
// A click in Slack proves only that someone holds a Slack session. On a
// route with step_up, approval.Service refuses such a click (ESTEPUP) and
// the bot hands the clicker a single-use link (approval.StepUpLink) to
// PUBLIC_URL/step-up/<id>. This package shows the call as the card does
// (approval's platform-neutral view), asks the browser for an assertion
// whose challenge is approval.StepUpChallenge(link) — bound to the request,
// the calls, their argument digests, the approver and the expiry — checks
// it with github.com/go-webauthn/webauthn against the approver's own
// registered credentials, and only then calls CompleteStepUp, which
// decides through the usual checks. Every refusal is a page that says why
// and records nothing.
//
// It imports approval, never store or bot (docs/ARCHITECTURE.md, "Import
// rules"): credentials and registration links are kept through the Store
// port, which cmd/slackbot implements over package store, and the person
// is told of a registration or removal through Config.Notify (a Slack DM
// the bot sends).
package stepup
