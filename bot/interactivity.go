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
	"github.com/slackapprove/slackbot/routing"
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
		payload, err := formValue(r, "payload")
		if err != nil {
			http.Error(w, "malformed form body", http.StatusBadRequest)
			return
		}
		cb, err := parseClick(payload)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := b.interact(ctx, cb) // ctx has the budget already
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
	return b.interact(ctx, cb)
}

// interact is Interact within ctx's budget.
func (b *Bot) interact(ctx context.Context, cb *slack.InteractionCallback) any {
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

// clickTarget is a click resolved to its call: the request as loaded
// once, for the whole click.
type clickTarget struct {
	approval *approval.Request
	call     *approval.Call
	route    *routing.Route
	// by is who clicked, as the Service authorizes them.
	by approval.Decider
	// channel is where to tell the person what happened.
	channel string
}

// target loads the call a button or form refers to, once, and checks that
// the click comes from this workspace (a refusal the Service records like
// its own). Its error is meant for the person who clicked.
func (b *Bot) target(ctx context.Context, cb *slack.InteractionCallback, token, callID string, card approval.MessageRef) (*clickTarget, error) {
	a, err := b.svc.Get(ctx, token)
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
	// Team binds a step-up link to the person (BeginStepUp): the
	// installation's workspace, the one key App Home registers passkeys
	// under too (a user id is unique across an Enterprise Grid
	// organization, whichever of its workspaces they click from).
	t := &clickTarget{approval: a, call: c, route: b.svc.Route(c.Route),
		by: approval.Decider{User: cb.User.ID, Team: b.workspace.TeamID, Message: card}, channel: card.Channel}
	if !b.workspace.accepts(cb.Team.ID, cb.Enterprise.ID) {
		refused := approval.Errorf(approval.EWRONGTEAM, "This button comes from another Slack workspace.")
		b.svc.Refuse(ctx, a, c, t.by, refused)
		return nil, refused
	}
	return t, nil
}

// formActions are the buttons that open a form, and the decision the form
// makes.
var formActions = map[string]approval.Action{
	ActionIDDenyReason: approval.ActionDeny, ActionIDEdit: approval.ActionApprove, ActionIDAnswer: approval.ActionAnswer,
}

func (b *Bot) blockActions(ctx context.Context, cb *slack.InteractionCallback) {
	act := cb.ActionCallback.BlockActions[0]
	if urlButton(act.ActionID) {
		return // it opened its page; Slack wants the click acknowledged
	}
	if homeClick(cb) {
		b.homeAction(ctx, cb)
		return
	}
	msg := approval.MessageRef{Channel: cb.Channel.ID, ID: cb.Message.Timestamp}
	if cb.Container.ChannelID != "" {
		msg = approval.MessageRef{Channel: cb.Container.ChannelID, ID: cb.Container.MessageTs}
	}
	user := cb.User.ID
	token, callID, err := DecodeAction(act.Value)
	if err != nil {
		b.tell(ctx, msg.Channel, user, "This button is not one slackbot made.")
		return
	}
	t, err := b.target(ctx, cb, token, callID, msg)
	if err != nil {
		b.tell(ctx, msg.Channel, user, explainLate(ctx, err, nil, nil))
		return
	}
	switch act.ActionID {
	case ActionIDViewArgs:
		// Anyone who can see the card may read the arguments.
		b.openView(ctx, cb.TriggerID, msg.Channel, user, ArgsModal(b.cards.card(t.approval, t.call)))
	case ActionIDApprove, ActionIDDeny:
		action := approval.ActionApprove
		if act.ActionID == ActionIDDeny {
			action = approval.ActionDeny
		}
		// A decision whose fate is found out later is told later, one that
		// needs step-up by stepUp.
		if text := b.decideClick(ctx, t, approval.Decision{CallID: t.call.ID, By: user, Action: action}, cb.TriggerID); !quiet(text) {
			b.tell(ctx, msg.Channel, user, text)
		}
	case ActionIDApproveAll, ActionIDDenyAll:
		if text := b.decideAll(ctx, t, batchAction(act.ActionID), cb.TriggerID); text != "" {
			b.tell(ctx, msg.Channel, user, text)
		}
	case ActionIDApproveAlways:
		// The rule is the one the request offered: the click names none.
		if text := b.decideClick(ctx, t, approval.Decision{CallID: t.call.ID, By: user, Action: approval.ActionApprove, AlwaysAllow: true}, cb.TriggerID); !quiet(text) {
			b.tell(ctx, msg.Channel, user, text)
		}
	case ActionIDDenyReason, ActionIDEdit, ActionIDAnswer:
		b.openForm(ctx, cb.TriggerID, act.ActionID, t)
	default:
		if d, ok := grantOf(act.ActionID); ok {
			if text := b.decideClick(ctx, t, approval.Decision{CallID: t.call.ID, By: user, Action: approval.ActionApprove, Grant: d}, cb.TriggerID); !quiet(text) {
				b.tell(ctx, msg.Channel, user, text)
			}
			return
		}
		b.log.WarnContext(ctx, "unknown action", "action_id", act.ActionID)
	}
}

// openForm opens the form of a button, for a person who may decide the
// call, while it is pending.
func (b *Bot) openForm(ctx context.Context, triggerID, actionID string, t *clickTarget) {
	user, msg := t.by.User, t.by.Message
	if err := b.svc.Authorize(ctx, t.approval, t.call, t.by, formActions[actionID]); err != nil {
		b.tell(ctx, msg.Channel, user, explainLate(ctx, err, t.call, t.route))
		return
	}
	if t.approval.State != approval.StatePending || t.call.Status != approval.CallPending {
		b.tell(ctx, msg.Channel, user, Explain(stateErr(t), t.call, t.route))
		return
	}
	card := b.cards.card(t.approval, t.call)
	var view slack.ModalViewRequest
	switch actionID {
	case ActionIDDenyReason:
		view = DenyReasonModal(card, msg)
	case ActionIDEdit:
		view = EditArgsModal(card, msg, card.Args)
	default:
		view = AnswerModal(card, msg)
	}
	b.openView(ctx, triggerID, msg.Channel, user, view)
}

// stateErr maps a token's or call's final state to the error a late click gets.
func stateErr(t *clickTarget) error {
	if err := t.approval.EndErr(); err != nil {
		return err
	}
	return approval.ErrDecided
}

// decide records a person's decision through the Service, within the
// acknowledgement budget, and returns what to tell them: "" when it was
// recorded (the Service then updates the card). The one Decide for
// buttons and forms: it authorizes (a refusal is audited and counted),
// checks edited arguments, and records. A decision whose fate the budget
// left unknown is found out after the acknowledgement (confirmLater).
// The Service's error comes with it: decideClick steps up an approval
// refused with ESTEPUP.
func (b *Bot) decide(ctx context.Context, t *clickTarget, d approval.Decision) (string, error) {
	if ctx.Err() != nil {
		// The budget is spent: a decision sent now could land after Slack
		// was told nothing changed.
		return tooLateText, ctx.Err()
	}
	d = notAfter(ctx, d)
	res, err := b.svc.DecideOn(ctx, t.approval, t.by, d)
	return b.decided(ctx, t, d, res, err), err
}

// decided is what to tell the person of a decision's result.
func (b *Bot) decided(ctx context.Context, t *clickTarget, d approval.Decision, res *approval.Decided, err error) string {
	switch code := approval.ErrorCode(err); {
	case err == nil:
		return ""
	case code == approval.ETOOLATE:
		if ctx.Err() == nil {
			// Refused while this process still had time: the store's clock
			// is ahead of this host's by more than the budget.
			b.log.ErrorContext(ctx, "the store refused a decision as late although it was sent in time; check that this host's and Redis's clocks agree (NTP)", "err", err)
		}
		return tooLateText
	case code == approval.EINTERNAL && pastBudget(ctx, err):
		// The store may have recorded it just before the deadline.
		b.log.WarnContext(ctx, "decision not confirmed within the acknowledgement budget", "err", err, "user", d.By)
		b.confirmLater(ctx, t, d)
		return confirmLaterText
	case code == approval.EDECIDED:
		return Explain(err, callOr(res, t.call), t.route)
	case code == approval.EUNCONFIRMED:
		// Held until Redis's replicas confirm it, however late: never
		// "nothing changed".
		return Explain(err, t.call, t.route)
	}
	return explainLate(ctx, err, t.call, t.route)
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
		// Not retried: a 429 fails the call too.
		countLimited(b.metrics, MethodViewsOpen, err)
		b.metrics.SlackError(MethodViewsOpen)
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

// viewSubmission handles the forms. A problem is answered in the form
// itself (response_action errors), within Slack's three seconds.
func (b *Bot) viewSubmission(ctx context.Context, cb *slack.InteractionCallback) any {
	meta, err := DecodeModalMetadata(cb.View.PrivateMetadata)
	if err != nil {
		return nil // not our modal: close it
	}
	id := cb.View.CallbackID
	t, err := b.target(ctx, cb, meta.Token, meta.CallID, meta.Message)
	if err != nil {
		return modalError(id, explainLate(ctx, err, nil, nil))
	}
	d, problem := b.formDecision(cb, t)
	if problem != "" {
		return modalError(id, problem)
	}
	if d.Action == "" {
		return nil
	}
	// An approval with edited arguments steps up as a click does (the
	// link holds the edit); the form closes, and the answer is under the
	// card.
	if text := b.decideClick(ctx, t, d, ""); text != "" && text != stepUpStarted {
		return modalError(id, text)
	}
	return nil
}

// formDecision reads the decision a form submits; problem is shown under
// its input.
func (b *Bot) formDecision(cb *slack.InteractionCallback, t *clickTarget) (d approval.Decision, problem string) {
	d = approval.Decision{CallID: t.call.ID, By: cb.User.ID}
	values := cb.View.State.Values
	switch cb.View.CallbackID {
	case CallbackDenyReason:
		d.Action = approval.ActionDeny
		d.Reason = strings.TrimSpace(values[BlockIDDenyReason][ActionIDDenyReasonInput].Value)
	case CallbackEditArgs:
		// Which calls may be edited is the Service's rule (DecideOn); the
		// card shows Edit for them only.
		d.Action = approval.ActionApprove
		if fields := editedFields(values); fields != nil {
			return editedAgentArgs(d, t, fields)
		}
		d.OverrideArgs = json.RawMessage(values[BlockIDEditArgs][ActionIDEditArgsInput].Value)
		if len(strings.TrimSpace(string(d.OverrideArgs))) == 0 {
			d.OverrideArgs = json.RawMessage(" ") // the Service's check refuses it as not JSON
		}
	case CallbackAnswer:
		d.Action = approval.ActionAnswer
		answer := strings.TrimSpace(values[BlockIDAnswer][ActionIDAnswerInput].Value)
		if answer == "" {
			return d, "Write an answer."
		}
		d.Answer = mustJSON(answer)
	}
	return d, ""
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
