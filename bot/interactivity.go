package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/slack-go/slack"
)

// HandleInteraction serves POST /slack/interactivity. Wrap it in
// VerifySlack: it trusts its body. A decision is recorded in Redis before
// the request is acknowledged, so an acknowledged click is never lost;
// the Slack calls that follow (updating the card, ephemeral replies,
// modals) run after the acknowledgement. Everything before it shares one
// deadline, the acknowledgement budget, counted from here.
func (b *Bot) HandleInteraction() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := b.withAckBudget(r.Context())
		defer cancel()
		if err := r.ParseForm(); err != nil {
			http.Error(w, "malformed form body", http.StatusBadRequest)
			return
		}
		cb, err := parseClick(r.PostFormValue("payload"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := b.Interact(ctx, cb)
		if resp == nil {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	})
}

// Interact acts on one interactivity payload, whatever transport brought
// it (HTTP or Socket Mode), and returns the body of the acknowledgement:
// nil for an empty one, or a view_submission response such as inline
// errors. Decisions are recorded before it returns; Slack calls that
// follow run in the background. It returns within the acknowledgement
// budget (from its call, or ctx's earlier deadline): a click that could
// not be recorded by then decides nothing and is explained.
func (b *Bot) Interact(ctx context.Context, cb *slack.InteractionCallback) any {
	ctx, cancel := b.withAckBudget(ctx)
	defer cancel()
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		b.blockActions(ctx, cb)
		return nil
	case slack.InteractionTypeViewSubmission:
		return b.viewSubmission(ctx, cb)
	default:
		// view_closed, shortcuts, ...: nothing to do, but acknowledge.
		return nil
	}
}

// ParseInteraction decodes an interactivity payload and checks the fields
// slackbot relies on. It never panics on hostile input.
func ParseInteraction(payload string) (*slack.InteractionCallback, error) {
	if payload == "" {
		return nil, errors.New("missing payload")
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(payload), &cb); err != nil {
		return nil, fmt.Errorf("malformed payload: %w", err)
	}
	return checkInteraction(&cb)
}

// parseClick is ParseInteraction without the blocks and attachments of
// the message the button was on: of that message it keeps only the head
// (ts, thread, channel, user, bot, text). Slack sends the whole message
// with every click, it is most of the payload, and decoding its blocks was
// the largest cost of acknowledging a click; nothing on the click path
// reads them. Everything else is decoded as slack-go decodes it.
func parseClick(payload string) (*slack.InteractionCallback, error) {
	if payload == "" {
		return nil, errors.New("missing payload")
	}
	// callback has no methods, so the decoder fills its fields directly
	// instead of calling slack-go's UnmarshalJSON; the fields declared here
	// are shallower than the embedded ones and take their keys.
	type callback slack.InteractionCallback
	var cb slack.InteractionCallback
	lean := struct {
		Type slack.InteractionType `json:"type"`
		*callback
		Message         messageHead `json:"message"`
		OriginalMessage messageHead `json:"original_message"`
	}{callback: (*callback)(&cb)}
	if err := json.Unmarshal([]byte(payload), &lean); err != nil {
		return nil, fmt.Errorf("malformed payload: %w", err)
	}
	cb.Type = lean.Type
	lean.Message.fill(&cb.Message)
	lean.OriginalMessage.fill(&cb.OriginalMessage)
	// What slack-go's UnmarshalJSON does besides decoding.
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		if len(cb.RawState) > 0 {
			if err := json.Unmarshal(cb.RawState, &cb.BlockActionState); err != nil {
				return nil, fmt.Errorf("malformed payload: state: %w", err)
			}
		}
	case slack.InteractionTypeDialogSubmission:
		cb.State = string(cb.RawState)
	}
	return checkInteraction(&cb)
}

// messageHead is what parseClick keeps of a message.
type messageHead struct {
	Type            string `json:"type"`
	Channel         string `json:"channel"`
	User            string `json:"user"`
	BotID           string `json:"bot_id"`
	Text            string `json:"text"`
	Timestamp       string `json:"ts"`
	ThreadTimestamp string `json:"thread_ts"`
}

func (h messageHead) fill(m *slack.Message) {
	m.Type, m.Channel, m.User, m.BotID, m.Text = h.Type, h.Channel, h.User, h.BotID, h.Text
	m.Timestamp, m.ThreadTimestamp = h.Timestamp, h.ThreadTimestamp
}

// checkInteraction checks the fields slackbot relies on.
func checkInteraction(cb *slack.InteractionCallback) (*slack.InteractionCallback, error) {
	if cb.User.ID == "" {
		return nil, errors.New("payload has no user")
	}
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		if len(cb.ActionCallback.BlockActions) == 0 {
			return nil, errors.New("block_actions payload has no action")
		}
	case slack.InteractionTypeViewSubmission:
		if cb.View.CallbackID == "" {
			return nil, errors.New("view_submission payload has no callback_id")
		}
	}
	return cb, nil
}

// clickTarget is a click resolved to its call.
type clickTarget struct {
	approval *Approval
	call     *CallStatus
	route    *Route
}

// target loads the call a button or modal refers to. Its error is meant
// for the person who clicked.
func (b *Bot) target(ctx context.Context, token, callID string) (*clickTarget, error) {
	a, err := b.approvals.Get(ctx, token)
	if err != nil {
		return nil, err
	}
	id, ok := ResolveCallID(callID, a.Requests.IDs())
	if !ok {
		return nil, ErrNotFound
	}
	c := a.Call(id)
	if c == nil {
		return nil, ErrNotFound
	}
	return &clickTarget{approval: a, call: c, route: b.route(c.Route)}, nil
}

func (b *Bot) blockActions(ctx context.Context, cb *slack.InteractionCallback) {
	act := cb.ActionCallback.BlockActions[0]
	token, callID, err := DecodeAction(act.Value)
	msg := MessageRef{Channel: cb.Channel.ID, TS: cb.Message.Timestamp}
	if cb.Container.ChannelID != "" {
		msg = MessageRef{Channel: cb.Container.ChannelID, TS: cb.Container.MessageTs}
	}
	user := cb.User.ID
	if err != nil {
		b.tell(ctx, msg.Channel, user, "This button is not one slackbot made.")
		return
	}
	t, err := b.target(ctx, token, callID)
	if err != nil {
		b.tell(ctx, msg.Channel, user, explainLate(ctx, err, nil))
		return
	}
	click := Click{TeamID: cb.Team.ID, EnterpriseID: cb.Enterprise.ID, User: user, Message: msg}

	switch act.ActionID {
	case ActionIDViewArgs:
		// Anyone who can see the card may read the arguments.
		b.openView(ctx, cb.TriggerID, msg.Channel, user, ArgsModal(b.card(t.approval, t.call)))
	case ActionIDApprove, ActionIDDeny:
		click.Action = ActionApprove
		if act.ActionID == ActionIDDeny {
			click.Action = ActionDeny
		}
		if !b.authorize(ctx, click, t) {
			return
		}
		b.decide(ctx, click, t, Decision{CallID: t.call.ID, By: user, Action: click.Action})
	case ActionIDDenyReason, ActionIDEdit, ActionIDAnswer:
		click.Action = map[string]Action{ActionIDDenyReason: ActionDeny, ActionIDEdit: ActionApprove, ActionIDAnswer: ActionAnswer}[act.ActionID]
		if !b.authorize(ctx, click, t) {
			return
		}
		if t.approval.State != ApprovalPending || t.call.State != StatePending {
			b.tell(ctx, msg.Channel, user, Explain(stateErr(t), t.call))
			return
		}
		card := b.card(t.approval, t.call)
		var view slack.ModalViewRequest
		switch act.ActionID {
		case ActionIDDenyReason:
			view = DenyReasonModal(card, msg)
		case ActionIDEdit:
			view = EditArgsModal(card, msg, card.Args)
		default:
			view = AnswerModal(card, msg)
		}
		b.openView(ctx, cb.TriggerID, msg.Channel, user, view)
	default:
		b.log.WarnContext(ctx, "unknown action", "action_id", act.ActionID)
	}
}

// stateErr maps a token's or call's final state to the error a late click gets.
func stateErr(t *clickTarget) error {
	switch t.approval.State {
	case ApprovalExpired:
		return ErrExpired
	case ApprovalCancelled:
		return ErrCancelled
	case ApprovalResolved, ApprovalFailed:
		return ErrResolved
	}
	return ErrDecided
}

// authorize checks a click and, when it is refused, records the refusal
// and tells the person why. It reports whether the click may proceed.
func (b *Bot) authorize(ctx context.Context, click Click, t *clickTarget) bool {
	err := b.auth.Authorize(ctx, click, t.call, t.route, t.approval.Origin.Requester())
	if err == nil {
		return true
	}
	var refused *RefusedError
	if !errors.As(err, &refused) {
		b.log.ErrorContext(ctx, "authorization failed", "err", err, "user", click.User)
		text := "slackbot could not check whether you may decide this request; nothing changed. Try again in a moment."
		if pastBudget(ctx, err) {
			text = tooLateText
		}
		b.tell(ctx, click.Message.Channel, click.User, text)
		return false
	}
	b.metrics.Refused(refusalKind(refused.Reason))
	if err := b.approvals.Refused(ctx, Refusal{Token: t.approval.Token, CallID: t.call.ID, User: click.User, Reason: refused.Reason}); err != nil {
		b.log.ErrorContext(ctx, "audit refused click", "err", err)
	}
	b.log.InfoContext(ctx, "click refused", "user", click.User, "route", t.call.Route, "reason", refused.Reason)
	b.tell(ctx, click.Message.Channel, click.User, ":no_entry: "+refused.Reason+" Nothing changed.")
	return false
}

func refusalKind(reason string) string {
	switch {
	case strings.HasPrefix(reason, "You asked"):
		return "self_approval"
	case strings.HasPrefix(reason, "You are not"):
		return "not_approver"
	case strings.Contains(reason, "workspace"):
		return "wrong_team"
	case strings.Contains(reason, "message"):
		return "wrong_message"
	default:
		return "other"
	}
}

// decide records a decision and then, after the acknowledgement, updates
// the card and tells the person if their click came too late.
func (b *Bot) decide(ctx context.Context, click Click, t *clickTarget, d Decision) {
	if ctx.Err() != nil {
		// The budget is spent: a decision sent now could land after Slack
		// was told nothing changed.
		b.tell(ctx, click.Message.Channel, click.User, tooLateText)
		return
	}
	d = notAfter(ctx, d)
	res, err := b.approvals.Decide(ctx, t.approval.Token, d)
	if err != nil && !errors.Is(err, ErrDecided) {
		if pastBudget(ctx, err) {
			b.tooLate(ctx, click, t, d, err)
			return
		}
		b.tell(ctx, click.Message.Channel, click.User, Explain(err, t.call))
		return
	}
	if errors.Is(err, ErrDecided) {
		b.tell(ctx, click.Message.Channel, click.User, Explain(err, res.callOr(t.call)))
		return
	}
	if res.Changed {
		b.metrics.Decision(string(res.Call.State))
		b.goAsync(ctx, "update card", func(ctx context.Context) error {
			return b.updateCard(ctx, res.Approval, res.Call)
		})
	}
}

func (d *Decided) callOr(c *CallStatus) *CallStatus {
	if d != nil && d.Call != nil {
		return d.Call
	}
	return c
}

// tell sends an ephemeral message after the acknowledgement.
func (b *Bot) tell(ctx context.Context, channel, user, text string) {
	if channel == "" || user == "" {
		return
	}
	b.goAsync(ctx, "ephemeral", func(ctx context.Context) error {
		return b.ephemeral(ctx, channel, user, text)
	})
}

// openView opens a modal for user after the acknowledgement. When Slack
// refuses it (most often because the click's trigger_id expired), the
// person is told, in the channel of the button, what happened and what to
// do: otherwise their click would seem to do nothing.
func (b *Bot) openView(ctx context.Context, triggerID, channel, user string, view slack.ModalViewRequest) {
	if triggerID == "" {
		return
	}
	b.goAsync(ctx, "open view", func(ctx context.Context) error {
		// A trigger_id lives three seconds: one attempt, no backoff.
		_, err := b.slack.OpenViewContext(ctx, triggerID, view)
		if err == nil {
			return nil
		}
		b.metrics.SlackError("views.open")
		if channel != "" && user != "" {
			if err := b.ephemeral(ctx, channel, user, viewFailedText(err)); err != nil {
				b.log.WarnContext(ctx, "tell that a form did not open", "err", err)
			}
		}
		return fmt.Errorf("views.open: %w", err)
	})
}

// viewFailedText says why a modal did not open, for the person who clicked.
func viewFailedText(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && se.Err == "expired_trigger_id" {
		return ":hourglass: The form did not open: Slack allows only three seconds between your click and the form, and that time ran out. Nothing changed. Click the button again."
	}
	return "slackbot could not open the form (Slack answered: " + EscapeText(truncate(err.Error(), 200)) + "). Nothing changed. Click the button again in a moment."
}

// Explain turns an error from a click into the sentence the person sees.
// This is the one place where errors become Slack replies.
func Explain(err error, call *CallStatus) string {
	switch {
	case errors.Is(err, ErrNotFound):
		return "slackbot no longer knows this request: it was decided or expired long ago. Nothing changed."
	case errors.Is(err, ErrExpired):
		return ":hourglass: This request expired before a decision arrived. Nothing changed."
	case errors.Is(err, ErrCancelled):
		return ":no_entry_sign: This request was cancelled. Nothing changed."
	case errors.Is(err, ErrTooLate):
		return tooLateText
	case errors.Is(err, ErrDecided), errors.Is(err, ErrResolved):
		if call != nil && call.DecidedBy != "" {
			return fmt.Sprintf("This call was already %s by %s. Nothing changed.", call.State, mentionOf(call.DecidedBy))
		}
		return "This call was already decided. Nothing changed."
	default:
		return "slackbot could not record your decision; nothing changed. Try again in a moment."
	}
}

// explainLate is Explain, except when the acknowledgement budget ran out:
// then the person is told that, and that nothing changed.
func explainLate(ctx context.Context, err error, call *CallStatus) string {
	if pastBudget(ctx, err) {
		return tooLateText
	}
	return Explain(err, call)
}

func mentionOf(who string) string {
	if isUserID(who) {
		return "<@" + who + ">"
	}
	// Anything else (a policy, an API client's free text) is shown as
	// text: it must not mention or link anything.
	return EscapeText(who)
}

// viewSubmission handles the modals. Validation errors are answered in the
// modal itself (response_action errors), within Slack's three seconds.
func (b *Bot) viewSubmission(ctx context.Context, cb *slack.InteractionCallback) any {
	meta, err := DecodeModalMetadata(cb.View.PrivateMetadata)
	if err != nil {
		return nil // not our modal: close it
	}
	user := cb.User.ID
	t, err := b.target(ctx, meta.Token, meta.CallID)
	if err != nil {
		return modalError(cb.View.CallbackID, explainLate(ctx, err, nil))
	}
	click := Click{TeamID: cb.Team.ID, EnterpriseID: cb.Enterprise.ID, User: user, Message: meta.Message}
	d := Decision{CallID: t.call.ID, By: user}
	values := cb.View.State.Values
	switch cb.View.CallbackID {
	case CallbackDenyReason:
		click.Action, d.Action = ActionDeny, ActionDeny
		d.Reason = strings.TrimSpace(values[BlockIDDenyReason][ActionIDDenyReasonInput].Value)
	case CallbackEditArgs:
		click.Action, d.Action = ActionApprove, ActionApprove
		text := values[BlockIDEditArgs][ActionIDEditArgsInput].Value
		args, problem := b.validateEdit(ctx, t, text)
		if problem != "" {
			return modalErrors(map[string]string{BlockIDEditArgs: problem})
		}
		d.OverrideArgs = args
	case CallbackAnswer:
		click.Action, d.Action = ActionAnswer, ActionAnswer
		answer := strings.TrimSpace(values[BlockIDAnswer][ActionIDAnswerInput].Value)
		if answer == "" {
			return modalErrors(map[string]string{BlockIDAnswer: "Write an answer."})
		}
		d.Answer = mustJSON(answer)
	default:
		return nil
	}
	if err := b.auth.Authorize(ctx, click, t.call, t.route, t.approval.Origin.Requester()); err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			b.metrics.Refused(refusalKind(refused.Reason))
			_ = b.approvals.Refused(ctx, Refusal{Token: t.approval.Token, CallID: t.call.ID, User: user, Reason: refused.Reason})
			return modalError(cb.View.CallbackID, refused.Reason)
		}
		if pastBudget(ctx, err) {
			return modalError(cb.View.CallbackID, tooLateText)
		}
		return modalError(cb.View.CallbackID, "slackbot could not check whether you may decide this request. Try again.")
	}
	if ctx.Err() != nil {
		return modalError(cb.View.CallbackID, tooLateText)
	}
	d = notAfter(ctx, d)
	res, err := b.approvals.Decide(ctx, t.approval.Token, d)
	if err != nil {
		if pastBudget(ctx, err) && !errors.Is(err, ErrTooLate) {
			b.confirmLater(ctx, click, t, d)
			return modalError(cb.View.CallbackID, "slackbot could not confirm in time whether this was recorded; a message will tell you. Check the card before you submit again.")
		}
		return modalError(cb.View.CallbackID, explainLate(ctx, err, res.callOr(t.call)))
	}
	if res.Changed {
		b.metrics.Decision(string(res.Call.State))
		b.goAsync(ctx, "update card", func(ctx context.Context) error {
			return b.updateCard(ctx, res.Approval, res.Call)
		})
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// modalError shows a message on the modal's main input.
func modalError(callbackID, msg string) any {
	block := map[string]string{CallbackDenyReason: BlockIDDenyReason, CallbackEditArgs: BlockIDEditArgs, CallbackAnswer: BlockIDAnswer}[callbackID]
	if block == "" {
		return nil
	}
	return modalErrors(map[string]string{block: msg})
}

func modalErrors(errs map[string]string) any {
	return map[string]any{"response_action": "errors", "errors": errs}
}
