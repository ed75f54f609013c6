package stepup

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Limits on guessing a one-time code. A 6-digit code accepted over three
// steps is guessed with probability 3·10⁻⁶ a try: unlimited tries would
// find one in hours. A link is burned after maxLinkTOTPFailures wrong
// codes, and a person who sends maxPersonTOTPFailures wrong codes within
// totpFailureWindow (across links) can use no code until the window
// passes: at most 10 guesses an hour, about 2.6·10⁻¹ a year.
const (
	maxLinkTOTPFailures   = 3
	maxPersonTOTPFailures = 10
	totpFailureWindow     = time.Hour
)

// EventTOTPLocked is the audit type of a person whose one-time codes are
// refused for the rest of the window after too many wrong ones.
const EventTOTPLocked = "totp_locked"

const (
	msgLinkBurned   = "Too many wrong codes were tried with this link, so it no longer accepts codes. Nothing changed. Start again from Slack for a new link."
	msgPersonLocked = "Too many wrong codes were tried for your account in the last hour, so slackbot accepts none for now. Nothing changed. Use a passkey, or try again later; your admins can see this in the audit log."
)

// checkTOTP checks code against secret for the person, counting a wrong
// one against scope (the link: "stepup:<id>" or "reg:<id>", kept for
// scopeTTL) and the person (Store.TOTPFailed). A link or person over its
// limit is refused before the code is even compared, so that a guess
// cannot tell whether it was right. With spend, the code's step is
// recorded as used (a code is accepted once); else the caller spends it
// later (an enrolment, after storing the secret). It returns the step, or
// a refusal's status and sentence.
func (h *Handler) checkTOTP(ctx context.Context, team, user, scope string, scopeTTL time.Duration, secret []byte, code string, spend bool) (int64, int, string) {
	linkN, personN, err := h.cfg.Store.TOTPFailures(ctx, team, user, scope)
	switch {
	case err != nil:
		h.cfg.Log.Error("stepup: read totp failures", "err", err)
		return 0, http.StatusServiceUnavailable, msgTryAgain
	case personN >= maxPersonTOTPFailures:
		return 0, http.StatusTooManyRequests, msgPersonLocked
	case linkN >= maxLinkTOTPFailures:
		return 0, http.StatusForbidden, msgLinkBurned
	}
	step, ok := matchTOTP(secret, code, h.cfg.Now())
	if ok && spend {
		first, err := h.cfg.Store.UseTOTPStep(ctx, team, user, step)
		if err != nil {
			h.cfg.Log.Error("stepup: record totp step", "err", err)
			return 0, http.StatusServiceUnavailable, msgTryAgain
		}
		ok = first
	}
	if ok {
		return step, 0, ""
	}
	// A code replayed counts as a wrong one: it is a guess as far as the
	// person's limit is concerned.
	linkN, personN, err = h.cfg.Store.TOTPFailed(ctx, team, user, scope, scopeTTL, totpFailureWindow)
	if err != nil {
		h.cfg.Log.Error("stepup: count totp failure", "err", err)
		return 0, http.StatusServiceUnavailable, msgTryAgain
	}
	if personN == maxPersonTOTPFailures {
		h.audit(ctx, PasskeyEvent{Type: EventTOTPLocked, Team: team, User: user, ID: MethodTOTP, Name: fmt.Sprintf("%d wrong codes", personN), Method: MethodTOTP})
		h.notify(ctx, team, user, "🔑 Too many wrong one-time codes were tried for your slackbot approvals in the last hour; codes are refused for now. If this was not you, tell your admins.")
	}
	switch {
	case personN >= maxPersonTOTPFailures:
		return 0, http.StatusTooManyRequests, msgPersonLocked
	case linkN >= maxLinkTOTPFailures:
		return 0, http.StatusForbidden, msgLinkBurned
	}
	return 0, http.StatusForbidden, ""
}
