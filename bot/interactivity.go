package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
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
	approval *approval.Request
	call     *approval.Call
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
		return nil, approval.ErrNotFound
	}
	c := a.Call(id)
	if c == nil {
		return nil, approval.ErrNotFound
	}
	return &clickTarget{approval: a, call: c, route: b.route(c.Route)}, nil
}

func (b *Bot) blockActions(ctx context.Context, cb *slack.InteractionCallback) {
	act := cb.ActionCallback.BlockActions[0]
	token, callID, err := DecodeAction(act.Value)
	msg := approval.MessageRef{Channel: cb.Channel.ID, TS: cb.Message.Timestamp}
	if cb.Container.ChannelID != "" {
		msg = approval.MessageRef{Channel: cb.Container.ChannelID, TS: cb.Container.MessageTs}
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
		click.Action = approval.ActionApprove
		if act.ActionID == ActionIDDeny {
			click.Action = approval.ActionDeny
		}
		if !b.authorize(ctx, click, t) {
			return
		}
		b.decide(ctx, click, t, approval.Decision{CallID: t.call.ID, By: user, Action: click.Action})
	case ActionIDDenyReason, ActionIDEdit, ActionIDAnswer:
		click.Action = map[string]approval.Action{ActionIDDenyReason: approval.ActionDeny, ActionIDEdit: approval.ActionApprove, ActionIDAnswer: approval.ActionAnswer}[act.ActionID]
		if !b.authorize(ctx, click, t) {
			return
		}
		if t.approval.State != approval.StatePending || t.call.Status != approval.CallPending {
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
	case approval.StateExpired:
		return approval.ErrExpired
	case approval.StateCancelled:
		return approval.ErrCancelled
	case approval.StateResolved:
		return approval.ErrResolved
	case approval.StateFailed:
		return approval.ErrFailed
	}
	return approval.ErrDecided
}

// authorize checks a click and, when it is refused, records the refusal
// and tells the person why. It reports whether the click may proceed.
func (b *Bot) authorize(ctx context.Context, click Click, t *clickTarget) bool {
	err := b.auth.Authorize(ctx, click, t.call, t.route, t.approval.Origin.Requester())
	if err == nil {
		return true
	}
	refused, ok := asRefusal(err)
	if !ok {
		b.log.ErrorContext(ctx, "authorization failed", "err", err, "user", click.User)
		text := "slackbot could not check whether you may decide this request; nothing changed. Try again in a moment."
		if pastBudget(ctx, err) {
			text = tooLateText
		}
		b.tell(ctx, click.Message.Channel, click.User, text)
		return false
	}
	b.refused(ctx, click, t, refused)
	b.tell(ctx, click.Message.Channel, click.User, ":no_entry: "+refused.Message+" Nothing changed.")
	return false
}

// refused counts a refused click by its code and records it in the audit
// stream.
func (b *Bot) refused(ctx context.Context, click Click, t *clickTarget, refused *approval.Error) {
	b.metrics.Refused(refused.Code)
	if err := b.approvals.Refused(ctx, t.approval.Token, t.call.ID, click.User, refused.Code, refused.Message); err != nil {
		b.log.ErrorContext(ctx, "audit refused click", "err", err)
	}
	b.log.InfoContext(ctx, "click refused", "user", click.User, "route", t.call.Route, "code", refused.Code, "reason", refused.Message)
}

// decide records a decision and then, after the acknowledgement, updates
// the card and tells the person if their click came too late.
func (b *Bot) decide(ctx context.Context, click Click, t *clickTarget, d approval.Decision) {
	if ctx.Err() != nil {
		// The budget is spent: a decision sent now could land after Slack
		// was told nothing changed.
		b.tell(ctx, click.Message.Channel, click.User, tooLateText)
		return
	}
	d = notAfter(ctx, d)
	res, err := b.approvals.Decide(ctx, t.approval.Token, d)
	if err != nil && !errors.Is(err, approval.ErrDecided) {
		if pastBudget(ctx, err) {
			b.tooLate(ctx, click, t, d, err)
			return
		}
		b.tell(ctx, click.Message.Channel, click.User, Explain(err, t.call))
		return
	}
	if errors.Is(err, approval.ErrDecided) {
		b.tell(ctx, click.Message.Channel, click.User, Explain(err, callOr(res, t.call)))
		return
	}
	b.decided(ctx, res)
}

// decided counts a decision that changed the call and updates its card
// after the acknowledgement.
func (b *Bot) decided(ctx context.Context, res *approval.Decided) {
	if !res.Changed {
		return
	}
	b.metrics.Decision(string(res.Call.Status))
	b.goAsync(ctx, "update card", func(ctx context.Context) error {
		return b.updateCard(ctx, res.Request, res.Call)
	})
}

// callOr is the call a decision concerns, or c if the store said nothing.
func callOr(d *approval.Decided, c *approval.Call) *approval.Call {
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

// Explain turns an error from a click into the sentence the person sees:
// one sentence per approval error code. This is the one place where
// errors become Slack replies.
func Explain(err error, call *approval.Call) string {
	switch approval.ErrorCode(err) {
	case approval.ENOTFOUND:
		return "slackbot no longer knows this request: it was decided or expired long ago. Nothing changed."
	case approval.EEXPIRED:
		return ":hourglass: This request expired before a decision arrived. Nothing changed."
	case approval.ECANCELLED:
		return ":no_entry_sign: This request was cancelled. Nothing changed."
	case approval.ETOOLATE:
		return tooLateText
	case approval.EDECIDED, approval.ERESOLVED, approval.EFAILED:
		if call != nil && call.DecidedBy != "" {
			return fmt.Sprintf("This call was already %s by %s. Nothing changed.", call.Status, mentionOf(call.DecidedBy))
		}
		return "This call was already decided. Nothing changed."
	default:
		return "slackbot could not record your decision; nothing changed. Try again in a moment."
	}
}

// explainLate is Explain, except when the acknowledgement budget ran out:
// then the person is told that, and that nothing changed.
func explainLate(ctx context.Context, err error, call *approval.Call) string {
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
	d := approval.Decision{CallID: t.call.ID, By: user}
	values := cb.View.State.Values
	switch cb.View.CallbackID {
	case CallbackDenyReason:
		click.Action, d.Action = approval.ActionDeny, approval.ActionDeny
		d.Reason = strings.TrimSpace(values[BlockIDDenyReason][ActionIDDenyReasonInput].Value)
	case CallbackEditArgs:
		click.Action, d.Action = approval.ActionApprove, approval.ActionApprove
		text := values[BlockIDEditArgs][ActionIDEditArgsInput].Value
		args, problem := b.validateEdit(ctx, t, text)
		if problem != "" {
			return modalErrors(map[string]string{BlockIDEditArgs: problem})
		}
		d.OverrideArgs = args
	case CallbackAnswer:
		click.Action, d.Action = approval.ActionAnswer, approval.ActionAnswer
		answer := strings.TrimSpace(values[BlockIDAnswer][ActionIDAnswerInput].Value)
		if answer == "" {
			return modalErrors(map[string]string{BlockIDAnswer: "Write an answer."})
		}
		d.Answer = mustJSON(answer)
	default:
		return nil
	}
	if err := b.auth.Authorize(ctx, click, t.call, t.route, t.approval.Origin.Requester()); err != nil {
		if refused, ok := asRefusal(err); ok {
			b.refused(ctx, click, t, refused)
			return modalError(cb.View.CallbackID, refused.Message)
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
		if pastBudget(ctx, err) && !errors.Is(err, approval.ErrTooLate) {
			b.confirmLater(ctx, click, t, d)
			return modalError(cb.View.CallbackID, "slackbot could not confirm in time whether this was recorded; a message will tell you. Check the card before you submit again.")
		}
		return modalError(cb.View.CallbackID, explainLate(ctx, err, callOr(res, t.call)))
	}
	b.decided(ctx, res)
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
