package bot

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/slack-go/slack/slackevents"
)

// outerEvent is an event_callback carrying an app_mention, with the outer
// fields set by edit.
func outerEvent(edit func(map[string]any)) map[string]any {
	ev := map[string]any{
		"token": "unused", "team_id": smTeam, "api_app_id": "A0APP", "type": "event_callback",
		"event_id": "Ev1", "event_time": 1700000001,
		"event": map[string]any{"type": "app_mention", "user": smRequester, "text": "<@U0BOT> refund order 42",
			"ts": "1700000001.000200", "channel": "C0SUPPORT", "event_ts": "1700000001.000200"},
	}
	if edit != nil {
		edit(ev)
	}
	return ev
}

func authorization(team, enterprise string) map[string]any {
	return map[string]any{"team_id": team, "enterprise_id": enterprise, "user_id": smBotUser, "is_bot": true}
}

func TestWorkspaceOwnsEvent(t *testing.T) {
	grid := Workspace{TeamID: smTeam, EnterpriseID: "E0ORG"}
	plain := Workspace{TeamID: smTeam}
	tests := []struct {
		name string
		ws   Workspace
		edit func(map[string]any)
		want bool
	}{
		{"this workspace", plain, nil, true},
		{"another workspace", plain, func(e map[string]any) { e["team_id"] = "T0OTHER" }, false},
		{"no team at all", plain, func(e map[string]any) { delete(e, "team_id") }, false},
		{"another workspace, installed there", plain, func(e map[string]any) {
			e["team_id"] = "T0OTHER"
			e["authorizations"] = []any{authorization("T0OTHER", "")}
		}, false},
		{"shared channel: another team's user, our installation", plain, func(e map[string]any) {
			e["team_id"] = "T0OTHER"
			e["authorizations"] = []any{authorization(smTeam, "")}
		}, true},
		{"another organization's enterprise id does not help", plain, func(e map[string]any) {
			e["team_id"], e["enterprise_id"] = "T0OTHER", "E0EVIL"
		}, false},
		{"grid: another workspace of the organization", grid, func(e map[string]any) {
			e["team_id"], e["enterprise_id"] = "T0SISTER", "E0ORG"
		}, true},
		{"grid: org-wide install, team_id null", grid, func(e map[string]any) {
			e["team_id"], e["enterprise_id"] = nil, "E0ORG"
			e["authorizations"] = []any{map[string]any{"enterprise_id": "E0ORG", "team_id": nil, "is_enterprise_install": true}}
		}, true},
		{"grid: another organization", grid, func(e map[string]any) {
			e["team_id"], e["enterprise_id"] = "T0OTHER", "E0EVIL"
			e["authorizations"] = []any{authorization("T0OTHER", "E0EVIL")}
		}, false},
		{"installation unknown: everything", Workspace{}, func(e map[string]any) { e["team_id"] = "T0OTHER" }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := slackevents.ParseEvent(mustJSON(outerEvent(tt.edit)), slackevents.OptionNoVerifyToken())
			if err != nil {
				t.Fatalf("ParseEvent: %v", err)
			}
			if got := tt.ws.OwnsEvent(ev); got != tt.want {
				t.Errorf("OwnsEvent: got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEventsFromAnotherWorkspaceStartNoRun: a signed app_mention whose
// team is not the bot's is acknowledged (so Slack does not redeliver it)
// and starts no run, posts nothing; the same event from the bot's own
// workspace starts one.
func TestEventsFromAnotherWorkspaceStartNoRun(t *testing.T) {
	w := newEventsWorld(t)
	logs, slackAPI, started, b, runs := w.logs, w.slack, w.started, w.bot, w.runs
	events := w.events

	deliver := func(t *testing.T, ev map[string]any) {
		t.Helper()
		r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/slack/events", strings.NewReader(string(mustJSON(ev))))
		w := httptest.NewRecorder()
		events.HandleEvents().ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("status %d, want 200: %s", w.Code, w.Body)
		}
		runs.Wait()
		b.Close()
	}
	deliver(t, outerEvent(func(e map[string]any) { e["team_id"], e["event_id"] = "T0OTHER", "EvForeign" }))
	if prompts, _ := started.take(); len(prompts) != 0 {
		t.Errorf("runs started by another workspace's event: %q, want none", prompts)
	}
	if calls := slackAPI.Calls(); len(calls) != 0 {
		t.Errorf("Slack calls after another workspace's event: %q, want none", calls)
	}
	logs.waitFor(t, "event from another workspace dropped")

	deliver(t, outerEvent(nil))
	if prompts, _ := started.take(); !slices.Equal(prompts, []string{"refund order 42"}) {
		t.Errorf("runs started by the workspace's own event: %q, want one", prompts)
	}
}

// TestSocketModeDropsEventsFromAnotherWorkspace: the same rule over
// Socket Mode: the envelope is acknowledged and nothing runs.
func TestSocketModeDropsEventsFromAnotherWorkspace(t *testing.T) {
	w := newEventsWorld(t)
	logs, slackAPI, started, b, runs := w.logs, w.slack, w.started, w.bot, w.runs
	fake := newFakeSocketSlack(t, smAppToken)
	startSocketMode(t, fake, &SocketMode{Bot: b, Events: w.events, Log: logs.logger()}, smAppToken)
	conn := fake.next(t)

	envelope := eventsEnvelope("env-foreign", "EvForeign", 0, outerEvent(nil)["event"].(map[string]any))
	payload := envelope["payload"].(map[string]any)
	payload["team_id"] = "T0OTHER"
	payload["authorizations"] = []any{authorization("T0OTHER", "")}
	conn.send(t, envelope)
	if got := conn.ack(t, "env-foreign"); got != "" {
		t.Errorf("acknowledgement payload: got %s, want none", got)
	}
	runs.Wait()
	b.Close()
	if prompts, _ := started.take(); len(prompts) != 0 {
		t.Errorf("runs started by another workspace's envelope: %q, want none", prompts)
	}
	if calls := slackAPI.Calls(); len(calls) != 0 {
		t.Errorf("Slack calls: %q, want none", calls)
	}
	logs.waitFor(t, "event from another workspace dropped")
}
