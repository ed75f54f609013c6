package bot

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// cardClickPayload is a block_actions payload as Slack sends it for a click on
// an approval card: with the whole card, blocks and all.
func cardClickPayload(tb testing.TB) string {
	tb.Helper()
	card := Card{
		Token: agentrunner.NewToken(), ToolCallID: "call_1", Kind: agentrunner.KindApproval, ToolName: "delete_file",
		Args: json.RawMessage(`{"path":"/srv/data/customers.csv","recursive":false}`), Requester: "U0CAROL",
		RequesterIsUser: true, SourceChannel: "C0GENERAL", Route: "deletions", CreatedAt: time.Unix(1700000000, 0),
		ExpiresAt: time.Unix(1700003600, 0), RequiredApprovals: 1, State: approval.CallPending, AllowDenyReason: true, AllowEdit: true,
	}
	blocks, err := json.Marshal(ApprovalBlocks(card))
	if err != nil {
		tb.Fatal(err)
	}
	payload, err := json.Marshal(map[string]any{
		"type":       "block_actions",
		"team":       map[string]any{"id": "T0FAKE", "domain": "fake"},
		"user":       map[string]any{"id": "U0ALICE", "username": "alice", "team_id": "T0FAKE"},
		"api_app_id": "A0APP", "token": "x", "trigger_id": "1.trigger", "response_url": "https://hooks.slack.test/x",
		"container": map[string]any{"type": "message", "message_ts": "1700000000.000100", "channel_id": "C0APPROVALS"},
		"channel":   map[string]any{"id": "C0APPROVALS", "name": "approvals"},
		"message": map[string]any{"type": "message", "ts": "1700000000.000100", "text": ApprovalText(card),
			"user": "U0BOT", "bot_id": "B0BOT", "blocks": json.RawMessage(blocks)},
		"state": map[string]any{"values": map[string]any{"b": map[string]any{"a": map[string]any{"type": "plain_text_input", "value": "v"}}}},
		"actions": []map[string]any{{
			"type": "button", "action_id": ActionIDApprove, "block_id": BlockIDActions,
			"value": EncodeAction(card.Token, card.ToolCallID), "action_ts": "1700000001.000200",
		}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return string(payload)
}

// parseClick decodes everything ParseInteraction decodes except the
// blocks and attachments of the clicked message, and fails alike.
func TestParseClickMatchesParseInteraction(t *testing.T) {
	view, _ := json.Marshal(map[string]any{
		"type": "view_submission",
		"team": map[string]any{"id": "T0FAKE"}, "user": map[string]any{"id": "U0ALICE"},
		"view": map[string]any{"id": "V1", "type": "modal", "callback_id": CallbackDenyReason, "private_metadata": "m",
			"state": map[string]any{"values": map[string]any{BlockIDDenyReason: map[string]any{ActionIDDenyReasonInput: map[string]any{"type": "plain_text_input", "value": "no"}}}}},
	})
	for _, tc := range []struct {
		name, payload string
	}{
		{"click on a card", cardClickPayload(t)},
		{"view submission", string(view)},
		{"dialog submission", `{"type":"dialog_submission","user":{"id":"U1"},"state":"raw state"}`},
		{"no user", `{"type":"block_actions","actions":[{"action_id":"approve"}]}`},
		{"no action", `{"type":"block_actions","user":{"id":"U1"}}`},
		{"malformed", `{"type":"block_actions","user":`},
		{"message not an object", `{"type":"block_actions","user":{"id":"U1"},"message":[1]}`},
		{"empty", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := ParseInteraction(tc.payload)
			got, err := parseClick(tc.payload)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("parseClick error %v, ParseInteraction error %v", err, wantErr)
			}
			if err != nil {
				return
			}
			for _, m := range []*slack.Message{&want.Message, &want.OriginalMessage, &got.Message, &got.OriginalMessage} {
				m.Blocks, m.Attachments = slack.Blocks{}, nil
			}
			// slack.InteractionCallback has unexported fields deep down:
			// compare what it says, its JSON form.
			if diff := cmp.Diff(asJSON(t, want), asJSON(t, got)); diff != "" {
				t.Errorf("parseClick differs from ParseInteraction (-want +got):\n%s", diff)
			}
		})
	}
}

func asJSON(t *testing.T, cb *slack.InteractionCallback) map[string]any {
	t.Helper()
	b, err := json.Marshal(cb)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// BenchmarkParseInteraction and BenchmarkParseClick compare decoding a
// click with and without the clicked card's blocks:
//
//	go test -run '^$' -bench 'Parse(Interaction|Click)' -benchmem ./bot/
func BenchmarkParseInteraction(b *testing.B) {
	payload := cardClickPayload(b)
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, err := ParseInteraction(payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseClick(b *testing.B) {
	payload := cardClickPayload(b)
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, err := parseClick(payload); err != nil {
			b.Fatal(err)
		}
	}
}
