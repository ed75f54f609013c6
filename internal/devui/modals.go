package devui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/slackapprove/slackbot/internal/slackfake"
)

// submitRequest is POST /submit: a person submits a modal.
type submitRequest struct {
	User   string `json:"user"`
	ViewID string `json:"view_id"`
	// Values are the inputs' texts by block_id and action_id.
	Values map[string]map[string]string `json:"values"`
}

// closeRequest is POST /close: a person cancels a modal.
type closeRequest struct {
	User   string `json:"user"`
	ViewID string `json:"view_id"`
}

// requiredField is what Slack's client says under an empty required input.
const requiredField = "Please complete this required field."

// handleSubmit checks the inputs as Slack's client does, then delivers a
// view_submission payload and acts on slackbot's answer: errors are
// returned for the page to show under the inputs; an empty answer closes
// the modal; "clear", "update" and "push" do what they do in Slack.
func (h *Handler) handleSubmit() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req submitRequest
		if err := decodeRequest(w, r, &req); err != nil {
			h.writeError(w, r, err)
			return
		}
		res, err := h.submit(r, req)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
}

func (h *Handler) submit(r *http.Request, req submitRequest) (result, error) {
	user, err := h.person(req.User)
	if err != nil {
		return result{}, err
	}
	v, err := h.openView(req.ViewID, user.ID)
	if err != nil {
		return result{}, err
	}
	view := viewOf(v).View
	blocks, _ := view["blocks"].([]block)
	values, problems, err := stateValues(inputs(blocks), req.Values)
	if err != nil {
		return result{}, err
	}
	if len(problems) > 0 {
		return result{OK: false, Errors: problems}, nil
	}
	payload := map[string]any{
		"type":                  "view_submission",
		"team":                  h.payloadTeam(),
		"user":                  h.payloadUser(user),
		"api_app_id":            appID,
		"token":                 verificationToken,
		"trigger_id":            h.slack.IssueTrigger(user.ID, v.ID),
		"view":                  h.payloadView(v, view, values),
		"response_urls":         []any{},
		"is_enterprise_install": false,
		"enterprise":            nil,
	}
	a, err := h.sendInteraction(r.Context(), payload)
	if err != nil {
		return result{}, err
	}
	res := result{OK: true, Delivered: true, Status: a.Status, Body: shown(a.Body)}
	if err := h.respondToSubmission(r, v, user, a.Body, &res); err != nil {
		return result{}, err
	}
	return res, nil
}

// respondToSubmission acts on slackbot's answer to a view_submission.
func (h *Handler) respondToSubmission(r *http.Request, v slackfake.View, user slackfake.User, body []byte, res *result) error {
	if len(bytes.TrimSpace(body)) == 0 {
		h.slack.CloseView(v.ID)
		return nil
	}
	var resp struct {
		ResponseAction string            `json:"response_action"`
		Errors         map[string]string `json:"errors"`
		View           json.RawMessage   `json:"view"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return &webhookError{URL: h.webhook + interactivityPath, Status: res.Status, Body: res.Body,
			Err: fmt.Errorf("the answer to a view_submission must be empty or JSON: %w", err)}
	}
	switch resp.ResponseAction {
	case "":
		h.slack.CloseView(v.ID)
	case "errors":
		res.OK, res.Errors = false, resp.Errors
	case "clear":
		h.slack.CloseView(v.RootViewID)
	case "update":
		if _, err := h.callSlack(r.Context(), "views.update", map[string]any{"view_id": v.ID, "view": resp.View}); err != nil {
			return fmt.Errorf("response_action update: %w", err)
		}
	case "push":
		trigger := h.slack.IssueTrigger(user.ID, v.ID)
		if _, err := h.callSlack(r.Context(), "views.push", map[string]any{"trigger_id": trigger, "view": resp.View}); err != nil {
			return fmt.Errorf("response_action push: %w", err)
		}
	default:
		return &webhookError{URL: h.webhook + interactivityPath, Status: res.Status, Body: res.Body,
			Err: fmt.Errorf("unknown response_action %q", resp.ResponseAction)}
	}
	return nil
}

// handleClose closes a modal as its Cancel button does and, when the app
// asked with notify_on_close, delivers a view_closed payload.
func (h *Handler) handleClose() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req closeRequest
		if err := decodeRequest(w, r, &req); err != nil {
			h.writeError(w, r, err)
			return
		}
		res, err := h.closeView(r, req)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
}

func (h *Handler) closeView(r *http.Request, req closeRequest) (result, error) {
	v, err := h.openView(req.ViewID, "")
	if err != nil {
		return result{}, err
	}
	h.slack.CloseView(v.ID)
	view := viewOf(v).View
	if notify, _ := view["notify_on_close"].(bool); !notify {
		return result{OK: true}, nil
	}
	who := req.User
	if who == "" {
		who = v.User
	}
	user, err := h.person(who)
	if err != nil {
		return result{}, err
	}
	payload := map[string]any{
		"type":                  "view_closed",
		"team":                  h.payloadTeam(),
		"user":                  h.payloadUser(user),
		"api_app_id":            appID,
		"token":                 verificationToken,
		"view":                  h.payloadView(v, view, map[string]any{}),
		"is_cleared":            false,
		"is_enterprise_install": false,
		"enterprise":            nil,
	}
	a, err := h.sendInteraction(r.Context(), payload)
	if err != nil {
		return result{}, err
	}
	return result{OK: true, Delivered: true, Status: a.Status, Body: shown(a.Body)}, nil
}

// openView returns the open modal with id. A modal opened for someone is
// theirs alone; user "" skips that check.
func (h *Handler) openView(id, user string) (slackfake.View, error) {
	v, ok := h.slack.View(id)
	if !ok || v.Closed {
		return slackfake.View{}, fmt.Errorf("modal %q is not open: %w", id, errNotFound)
	}
	if user != "" && v.User != "" && v.User != user {
		return slackfake.View{}, fmt.Errorf("modal %s was opened for %s: %w", id, v.User, errConflict)
	}
	return v, nil
}

// stateValues builds view.state.values from the page's texts, and checks
// them as Slack's client does before it submits: required inputs filled
// in, lengths within min_length and max_length.
func stateValues(ins []input, texts map[string]map[string]string) (map[string]any, map[string]string, error) {
	known := map[string]bool{}
	values := map[string]any{}
	problems := map[string]string{}
	for _, in := range ins {
		known[in.blockID+"\x00"+in.actionID] = true
		if !textInputs[in.typ] {
			continue // selects and pickers: the emulator sends no selection
		}
		text := texts[in.blockID][in.actionID]
		n := utf8.RuneCountInString(text)
		switch {
		case strings.TrimSpace(text) == "" && !in.optional:
			problems[in.blockID] = requiredField
		case n > 0 && in.minLength > 0 && n < in.minLength:
			problems[in.blockID] = fmt.Sprintf("Must be at least %d characters.", in.minLength)
		case in.maxLength > 0 && n > in.maxLength:
			problems[in.blockID] = fmt.Sprintf("Must be at most %d characters.", in.maxLength)
		}
		var value any // Slack sends null for an input left empty
		if text != "" {
			value = text
		}
		values[in.blockID] = map[string]any{in.actionID: map[string]any{"type": in.typ, "value": value}}
	}
	for blockID, actions := range texts {
		for actionID := range actions {
			if !known[blockID+"\x00"+actionID] {
				return nil, nil, fmt.Errorf("the modal has no input %s/%s: %w", blockID, actionID, errBadRequest)
			}
		}
	}
	return values, problems, nil
}

// payloadView is a view as Slack puts it in view_submission and
// view_closed payloads: what the app sent, the ids Slack adds, and the
// inputs' state.
func (h *Handler) payloadView(v slackfake.View, view map[string]any, values map[string]any) map[string]any {
	team := h.slack.Team()
	out := map[string]any{
		"type":             "modal",
		"private_metadata": "",
		"callback_id":      "",
		"external_id":      "",
		"clear_on_close":   false,
		"notify_on_close":  false,
	}
	for k, val := range view {
		out[k] = val
	}
	out["id"] = v.ID
	out["team_id"] = team.ID
	out["state"] = map[string]any{"values": values}
	out["hash"] = v.Hash
	out["root_view_id"] = v.RootViewID
	out["previous_view_id"] = nil
	if v.PreviousViewID != "" {
		out["previous_view_id"] = v.PreviousViewID
	}
	out["app_id"] = appID
	out["app_installed_team_id"] = team.ID
	out["bot_id"] = h.botID()
	return out
}
