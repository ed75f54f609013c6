package bot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

// nopSlack answers every Slack call successfully and does nothing.
type nopSlack struct{}

func (nopSlack) PostMessageContext(context.Context, string, ...slack.MsgOption) (string, string, error) {
	return "C1", "1.1", nil
}
func (nopSlack) UpdateMessageContext(context.Context, string, string, ...slack.MsgOption) (string, string, string, error) {
	return "C1", "1.1", "", nil
}
func (nopSlack) PostEphemeralContext(context.Context, string, string, ...slack.MsgOption) (string, error) {
	return "1.1", nil
}
func (nopSlack) OpenViewContext(context.Context, string, slack.ModalViewRequest) (*slack.ViewResponse, error) {
	return &slack.ViewResponse{}, nil
}
func (nopSlack) GetUserGroupMembersContext(context.Context, string, ...slack.GetUserGroupMembersOption) ([]string, error) {
	return nil, nil
}
func (nopSlack) AuthTestContext(context.Context) (*slack.AuthTestResponse, error) {
	return &slack.AuthTestResponse{}, nil
}
func (nopSlack) GetPermalinkContext(context.Context, *slack.PermalinkParameters) (string, error) {
	return "", nil
}

func (nopSlack) GetConversationRepliesContext(context.Context, *slack.GetConversationRepliesParameters) ([]slack.Message, bool, string, error) {
	return nil, false, "", nil
}
func (nopSlack) GetConversationHistoryContext(context.Context, *slack.GetConversationHistoryParameters) (*slack.GetConversationHistoryResponse, error) {
	return &slack.GetConversationHistoryResponse{}, nil
}

// oneApproval is an Approvals holding one pending approval, enough for
// hostile payloads to reach every branch of the handler.
type oneApproval struct {
	stubStore
	a *approval.Request
}

// LockCard reads the request as Get does: the fake holds no leases.
func (o oneApproval) LockCard(ctx context.Context, token, _, _ string) (*approval.Request, error) {
	return o.Get(ctx, token)
}

func (o oneApproval) Get(_ context.Context, token string) (*approval.Request, error) {
	if token != o.a.Token {
		return nil, approval.ErrNotFound
	}
	return o.a, nil
}
func (o oneApproval) Decide(_ context.Context, _ string, d approval.Decision) (*approval.Decided, error) {
	return &approval.Decided{Request: o.a, Call: o.a.Call(d.CallID)}, approval.ErrDecided
}

// FuzzInteraction feeds arbitrary payloads to the interactivity handler
// (after signature verification, which it trusts): it must answer 200 or
// 400, never panic.
func FuzzInteraction(f *testing.F) {
	tok := "tok_0123456789abcdefghijklmnopqrstuvwxyzABCD"
	value := EncodeAction(tok, "call_1")
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `{"type":"block_actions"}`,
		`{"type":"block_actions","user":{"id":"U1"},"actions":[]}`,
		`{"type":"block_actions","user":{"id":"U1"},"team":{"id":"T1"},"container":{"channel_id":"C1","message_ts":"1.1"},"actions":[{"action_id":"approve","value":"` + value + `"}]}`,
		`{"type":"block_actions","user":{"id":"U1"},"actions":[{"action_id":"edit","value":"` + value + `"}],"trigger_id":"t"}`,
		`{"type":"block_actions","user":{"id":"U1"},"actions":[{"action_id":"view_args","value":"garbage"}]}`,
		`{"type":"view_submission","user":{"id":"U1"},"view":{"callback_id":"edit_args","private_metadata":"x","state":{"values":{}}}}`,
		`{"type":"view_submission","user":{"id":"U1"},"view":{"callback_id":"deny_reason","private_metadata":"{\"v\":1}"}}`,
		`{"type":"view_closed","user":{"id":"U1"}}`,
		`{"type":"block_actions","user":{"id":"U1"},"actions":[{"action_id":"approve","value":"` + strings.Repeat("1", 3000) + `"}]}`,
	} {
		f.Add(seed)
	}
	b := newTestBot(testConfig{
		Slack: nopSlack{},
		Approvals: oneApproval{a: &approval.Request{
			Token: tok, State: approval.StatePending,
			Calls: []approval.Call{{ID: "call_1", Status: approval.CallPending, Route: "r", Message: approval.MessageRef{Channel: "C1", ID: "1.1"}}},
		}},
		Routes: &routing.Routes{Routes: []*routing.Route{{Name: "r", Channel: "C1", Users: []string{"U1"}, RequiredApprovals: 1}}},
	})
	h := b.HandleInteraction()
	f.Fuzz(func(t *testing.T, payload string) {
		body := "payload=" + url.QueryEscape(payload)
		req := httptest.NewRequest(http.MethodPost, "/slack/interactivity", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Fatalf("payload %q: got status %d, want 200 or 400", payload, rec.Code)
		}
		b.Close()
	})
}
