package stepup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/slackapprove/slackbot/approval"
)

// The words of a refusal that is not approval's (approval.Explain says
// the others).
const (
	msgLinkGone    = "This link was already used, has expired, or never existed. Nothing changed. Click Approve on the card again for a new one."
	msgNoPasskey   = "You have no passkey registered, so this approval cannot be verified. Add one from slackbot's App Home in Slack (\"Add a passkey\"), then click Approve on the card again. Nothing changed."
	msgNotYours    = "This passkey is not registered to the person this link was made for. Only the approver who clicked Approve can complete it. Nothing changed."
	msgNoVerify    = "Your passkey's answer could not be verified for this link (%s). Nothing changed."
	msgReplay      = "This passkey's signature counter did not advance: the answer was replayed, or the passkey was copied. Nothing changed. If this keeps happening, remove the passkey from App Home and add it again."
	msgRemoved     = "This passkey was removed from your account. Nothing changed."
	msgApproved    = "Approved. Your passkey confirmed it; the card in Slack shows the approval."
	msgApprovedOTP = "Approved. Your one-time code confirmed it; the card in Slack shows the approval."
	msgBadCode     = "That code is not valid now, or was used already. Nothing changed. Wait for the next code and try again."
	msgNoTOTP      = "This route does not accept one-time codes, or you have none set up. Nothing changed."
	msgTryAgain    = "slackbot could not check this right now; nothing changed. Try again in a moment."
)

// link reads the step-up link of the request's path and checks that it
// still stands: the link unexpired and each of its calls still pending.
// A refusal returns its status and sentence.
func (h *Handler) link(ctx context.Context, id string) (*approval.StepUpLink, *approval.Request, int, string) {
	l, req, err := h.cfg.Approvals.StepUpLink(ctx, id)
	switch {
	case approval.ErrorCode(err) == approval.ENOTFOUND || (err == nil && l == nil):
		return nil, nil, http.StatusNotFound, msgLinkGone
	case err != nil:
		h.cfg.Log.Error("stepup: read link", "err", err)
		return nil, nil, http.StatusServiceUnavailable, msgTryAgain
	case !h.cfg.Now().Before(l.Expires):
		return nil, nil, http.StatusGone, msgLinkGone
	}
	// A call someone decided meanwhile is named with who decided it; a
	// request that ended otherwise (expired, cancelled) says so.
	for _, sc := range l.Calls {
		c := req.Call(sc.CallID)
		if c == nil {
			return nil, nil, http.StatusNotFound, msgLinkGone
		}
		if c.Status != approval.CallPending && c.DecidedBy != "" {
			return nil, nil, http.StatusConflict, approval.Explain(approval.ErrDecided, c, nil, textMarks{})
		}
	}
	if err := req.EndErr(); err != nil {
		return nil, nil, http.StatusConflict, approval.Explain(err, nil, nil, textMarks{})
	}
	for _, sc := range l.Calls {
		if c := req.Call(sc.CallID); c.Status != approval.CallPending {
			return nil, nil, http.StatusConflict, approval.Explain(approval.ErrDecided, c, nil, textMarks{})
		}
	}
	return l, req, 0, ""
}

// methods are the step-up methods the link's route accepts.
func methods(l *approval.StepUpLink) (webauthn, totp bool) {
	if len(l.Methods) == 0 {
		return true, false
	}
	return slices.Contains(l.Methods, MethodWebAuthn), slices.Contains(l.Methods, MethodTOTP)
}

// stepUpPage shows the call(s) the link approves and asks for the
// approver's passkey (or code).
func (h *Handler) stepUpPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	l, req, status, msg := h.link(ctx, id)
	if status != 0 {
		h.refuse(w, status, "This approval cannot be verified", msg)
		return
	}
	p, err := h.loadPerson(ctx, l.Team, l.User)
	if err != nil {
		h.cfg.Log.Error("stepup: load passkeys", "err", err)
		h.refuse(w, http.StatusServiceUnavailable, "This approval cannot be verified", msgTryAgain)
		return
	}
	useWebAuthn, useTOTP := methods(l)
	pg := page{Kind: "stepup", Title: "Verify your approval", Lead: "Confirm with your passkey that you, " + textMarks{}.Person(l.User) + ", approve exactly what is shown here. Nothing is approved until you do."}
	for _, sc := range l.Calls {
		v := h.cfg.Viewer.View(req, req.Call(sc.CallID))
		if len(l.OverrideArgs) > 0 {
			// An edit: what would run are the edited arguments.
			v.OverrideArgs, v.EditedChange = l.OverrideArgs, nil
		}
		cv := viewOf(v)
		if len(l.OverrideArgs) > 0 {
			cv.Label = "Arguments, as you edited them"
		}
		pg.Calls = append(pg.Calls, cv)
	}
	if len(pg.Calls) == 1 {
		pg.Heading = "Approve " + pg.Calls[0].Tool + "?"
	} else {
		pg.Heading = "Approve these " + strconv.Itoa(len(pg.Calls)) + " calls?"
	}
	switch {
	case l.Grant > 0:
		pg.Extra = "You are approving for " + approval.FormatWait(l.Grant) + ": the same call asked again in that time is approved too, with this verification."
	case l.AlwaysAllow:
		pg.Extra = "You are approving and always allowing this call: the agent will no longer ask for it."
	}
	pg.Extra += " This link expires at " + textMarks{}.Time(l.Expires) + "."
	if useWebAuthn && len(p.creds) > 0 {
		opts, _, err := h.beginLogin(p, approval.StepUpChallenge(l))
		if err == nil {
			pg.Options, err = jsonAttr(opts)
		}
		if err != nil {
			h.cfg.Log.Error("stepup: begin assertion", "err", err)
			h.refuse(w, http.StatusInternalServerError, "This approval cannot be verified", msgTryAgain)
			return
		}
		pg.Action, pg.Ceremony, pg.Button = "/step-up/"+id, "get", "Approve with your passkey"
	}
	if useTOTP {
		if secret, _, err := h.cfg.Store.TOTP(ctx, l.Team, l.User); err == nil && secret != nil {
			pg.TOTPAction, pg.TOTPButton = "/step-up/"+id+"/totp", "Approve with this code"
		}
	}
	if pg.Options == "" && pg.TOTPAction == "" {
		h.refuse(w, http.StatusForbidden, "Add a passkey first", msgNoPasskey)
		return
	}
	h.render(w, http.StatusOK, pg)
}

// stepUpWebAuthn checks the browser's assertion against the link's
// challenge and the approver's own passkeys, then completes the step-up.
// Nothing is recorded unless every check passes.
func (h *Handler) stepUpWebAuthn(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	l, _, status, msg := h.link(ctx, id)
	if status != 0 {
		writeAnswer(w, status, false, msg)
		return
	}
	if useWebAuthn, _ := methods(l); !useWebAuthn {
		writeAnswer(w, http.StatusForbidden, false, "This route does not accept passkeys. Nothing changed.")
		return
	}
	var body struct {
		Credential json.RawMessage `json:"credential"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Credential) == 0 {
		writeAnswer(w, http.StatusBadRequest, false, fmt.Sprintf(msgNoVerify, "the browser sent no passkey answer"))
		return
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(body.Credential)
	if err != nil {
		writeAnswer(w, http.StatusBadRequest, false, fmt.Sprintf(msgNoVerify, details(err)))
		return
	}
	p, err := h.loadPerson(ctx, l.Team, l.User)
	if err != nil {
		h.cfg.Log.Error("stepup: load passkeys", "err", err)
		writeAnswer(w, http.StatusServiceUnavailable, false, msgTryAgain)
		return
	}
	if len(p.creds) == 0 {
		writeAnswer(w, http.StatusForbidden, false, msgNoPasskey)
		return
	}
	_, session, err := h.beginLogin(p, approval.StepUpChallenge(l))
	if err != nil {
		h.cfg.Log.Error("stepup: begin assertion", "err", err)
		writeAnswer(w, http.StatusInternalServerError, false, msgTryAgain)
		return
	}
	cred, err := h.wa.ValidateLogin(p, *session, parsed)
	if err != nil {
		var unknown *protocol.ErrorUnknownCredential
		if errors.As(err, &unknown) || !ownCredential(p, parsed.RawID) {
			writeAnswer(w, http.StatusForbidden, false, msgNotYours)
			return
		}
		writeAnswer(w, http.StatusForbidden, false, fmt.Sprintf(msgNoVerify, details(err)))
		return
	}
	if cred.Authenticator.CloneWarning {
		writeAnswer(w, http.StatusForbidden, false, msgReplay)
		return
	}
	// The counter is recorded before the approval, atomically, so that of
	// two answers racing with one counter value only one goes on. Should
	// approval then refuse (the call decided meanwhile), the counter has
	// still moved: the authenticator did sign, and nothing was approved.
	credID := credentialID(cred.ID)
	now := h.cfg.Now()
	switch err := h.cfg.Store.UsePasskey(ctx, l.Team, l.User, credID, cred.Authenticator.SignCount, now); {
	case errors.Is(err, ErrSignCount):
		writeAnswer(w, http.StatusForbidden, false, msgReplay)
		return
	case errors.Is(err, ErrPasskeyGone):
		writeAnswer(w, http.StatusForbidden, false, msgRemoved)
		return
	case err != nil:
		h.cfg.Log.Error("stepup: record passkey use", "err", err)
		writeAnswer(w, http.StatusServiceUnavailable, false, msgTryAgain)
		return
	}
	proof := approval.StepUp{Method: MethodWebAuthn, AMR: []string{"hwk"}, CredentialID: credID, At: now}
	h.complete(w, r, l, p.team, p.user, proof, msgApproved)
}

// complete hands the verified proof to approval, which takes the link
// (once) and decides through the usual checks. team and user are whom the
// proof verified: the owner under whose passkeys (or TOTP secret) the
// store held the credential that answered. The page looks credentials up
// only under the link's person, so today they are the link's by
// construction; passing them (not l.Team, l.User) keeps approval's
// "someone else's link" check meaningful should that lookup ever widen
// (a discoverable-credential login that finds its owner by user handle).
func (h *Handler) complete(w http.ResponseWriter, r *http.Request, l *approval.StepUpLink, team, user string, proof approval.StepUp, ok string) {
	if _, err := h.cfg.Approvals.CompleteStepUp(r.Context(), l.ID, team, user, proof); err != nil {
		if approval.ErrorCode(err) == approval.EINTERNAL {
			h.cfg.Log.Error("stepup: complete", "err", err)
		}
		// approval's own sentence says why a link was refused (another
		// person's, expired, other arguments); Explain words the rest as
		// a card's click would be.
		msg := approval.Explain(err, nil, nil, textMarks{})
		switch approval.ErrorCode(err) {
		case approval.ENOTFOUND:
			msg = msgLinkGone
		case approval.EFORBIDDEN, approval.EEXPIRED, approval.EINVALID:
			msg = approval.ErrorMessage(err)
		}
		writeAnswerOrPage(w, r, h, http.StatusConflict, false, msg)
		return
	}
	writeAnswerOrPage(w, r, h, http.StatusOK, true, ok)
}

// writeAnswerOrPage answers a form's POST with a page and the script's
// with JSON.
func writeAnswerOrPage(w http.ResponseWriter, r *http.Request, h *Handler, status int, ok bool, msg string) {
	answerOrPage(w, r, h, status, ok, msg, "Approved", "Not approved")
}

// answerOrPage answers the script's POST with JSON, and a form's with a
// page headed done or, when !ok, failed.
func answerOrPage(w http.ResponseWriter, r *http.Request, h *Handler, status int, ok bool, msg, done, failed string) {
	if r.Header.Get("Content-Type") == "application/json" {
		writeAnswer(w, status, ok, msg)
		return
	}
	heading := done
	if !ok {
		heading = failed
	}
	h.render(w, status, page{Kind: "message", Title: heading, Heading: heading, Message: msg, OK: ok})
}

// stepUpTOTP checks a one-time code of the approver's TOTP secret, on a
// route that accepts them, then completes the step-up.
func (h *Handler) stepUpTOTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	l, _, status, msg := h.link(ctx, id)
	if status != 0 {
		h.refuse(w, status, "Not approved", msg)
		return
	}
	if _, useTOTP := methods(l); !useTOTP {
		h.refuse(w, http.StatusForbidden, "Not approved", msgNoTOTP)
		return
	}
	secret, _, err := h.cfg.Store.TOTP(ctx, l.Team, l.User)
	if err != nil {
		h.cfg.Log.Error("stepup: read totp", "err", err)
		h.refuse(w, http.StatusServiceUnavailable, "Not approved", msgTryAgain)
		return
	}
	if secret == nil {
		h.refuse(w, http.StatusForbidden, "Not approved", msgNoTOTP)
		return
	}
	now := h.cfg.Now()
	if _, status, msg := h.checkTOTP(ctx, l.Team, l.User, "stepup:"+l.ID, l.Expires.Sub(now), secret, r.PostFormValue("code"), true); status != 0 {
		if msg == "" {
			msg = msgBadCode
		}
		h.refuse(w, status, "Not approved", msg)
		return
	}
	h.complete(w, r, l, l.Team, l.User, approval.StepUp{Method: MethodTOTP, AMR: []string{"otp"}, CredentialID: MethodTOTP, At: now}, msgApprovedOTP)
}

// ownCredential reports whether raw is one of p's credentials.
func ownCredential(p *person, raw []byte) bool {
	id := credentialID(raw)
	for _, k := range p.keys {
		if k.ID == id {
			return true
		}
	}
	return false
}

// details is a WebAuthn error's short description, safe to show: it
// names the check that failed, never a key.
func details(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Details != "" {
		return pe.Details
	}
	return "it is malformed"
}
