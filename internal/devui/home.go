package devui

import (
	"fmt"
	"net/http"

	"github.com/slackapprove/slackbot/internal/slackfake"
)

// The app's Home tab: opening it sends app_home_opened, as Slack does when
// a person opens the app's Home; its buttons send block_actions whose
// container is the Home view.

// homeRequest is POST /home/open and POST /home/click.
type homeRequest struct {
	User     string `json:"user"`
	ActionID string `json:"action_id"`
	BlockID  string `json:"block_id"`
	// Value is the button's value as the page drew it; when it no longer
	// matches the Home the page is behind, and the click is refused.
	Value string `json:"value"`
}

func (h *Handler) handleHomeOpen() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req homeRequest
		if err := decodeRequest(w, r, &req); err != nil {
			h.writeError(w, r, err)
			return
		}
		user, err := h.person(req.User)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		event := map[string]any{
			"type": "app_home_opened", "user": user.ID, "channel": "D" + user.ID[1:],
			"tab": "home", "event_ts": slackTS(h.now()),
		}
		if home, ok := h.slack.Home(user.ID); ok {
			event["view"] = viewOf(home).View
		}
		a, err := h.sendEvent(r.Context(), h.eventCallback(event))
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, result{OK: true, Delivered: true, Status: a.Status, Body: shown(a.Body)})
	})
}

func (h *Handler) handleHomeClick() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req homeRequest
		if err := decodeRequest(w, r, &req); err != nil {
			h.writeError(w, r, err)
			return
		}
		res, err := h.homeClick(r, req)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	})
}

func (h *Handler) homeClick(r *http.Request, req homeRequest) (result, error) {
	user, err := h.person(req.User)
	if err != nil {
		return result{}, err
	}
	if req.ActionID == "" {
		return result{}, fmt.Errorf("no action_id given: %w", errBadRequest)
	}
	home, ok := h.slack.Home(user.ID)
	if !ok {
		return result{}, fmt.Errorf("%s has no Home tab yet: %w", user.ID, errNotFound)
	}
	view := viewOf(home).View
	blocks, _ := view["blocks"].([]block)
	el, blockID, ok := findElement(blocks, req.BlockID, req.ActionID)
	if !ok {
		return result{}, fmt.Errorf("this button is no longer on the Home tab: %w", errConflict)
	}
	value, _ := el["value"].(string)
	if el["type"] != "button" || (req.Value != "" && req.Value != value) {
		return result{}, fmt.Errorf("the button changed since the page drew it: %w", errConflict)
	}
	action := map[string]any{"type": "button", "action_id": req.ActionID, "block_id": blockID, "text": el["text"], "action_ts": slackTS(h.now())}
	if value != "" {
		action["value"] = value
	}
	payload := map[string]any{
		"type":                  "block_actions",
		"user":                  h.payloadUser(user),
		"api_app_id":            appID,
		"token":                 verificationToken,
		"container":             map[string]any{"type": "view", "view_id": home.ID},
		"trigger_id":            h.slack.IssueTrigger(user.ID, ""),
		"team":                  h.payloadTeam(),
		"enterprise":            nil,
		"is_enterprise_install": false,
		"view":                  homePayloadView(h.slack, home, view),
		"actions":               []any{action},
	}
	a, err := h.sendInteraction(r.Context(), payload)
	if err != nil {
		return result{}, err
	}
	return result{OK: true, Delivered: true, Status: a.Status, Body: shown(a.Body)}, nil
}

// homePayloadView is a Home view as a block_actions payload carries it.
func homePayloadView(s *slackfake.Server, home slackfake.View, view map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range view {
		out[k] = v
	}
	out["id"], out["type"], out["hash"], out["team_id"] = home.ID, "home", home.Hash, s.Team().ID
	out["root_view_id"], out["state"] = home.ID, map[string]any{"values": map[string]any{}}
	return out
}
