package bot

import (
	"errors"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

// slackAnswerErr reads a Slack answer's ok and error as slack-go does,
// whatever the order of its fields, and refuses what is not JSON.
func TestSlackAnswerErr(t *testing.T) {
	for _, tc := range []struct {
		answer, wantErr string // wantErr: the Slack error code, "malformed", or "" for nil
	}{
		{`{"ok":true,"channel":"C1","ts":"1.2","message":{"blocks":[]}}`, ""},
		{`{ "ok": true }`, ""},
		{`{"channel":"C1","ok":true}`, ""},
		{`{"ok":false,"error":"msg_blocks_too_long"}`, "msg_blocks_too_long"},
		{`{"error":"ratelimited","ok":false}`, "ratelimited"},
		{`{"ok":false}`, ""}, // slack-go: no error code, no error
		{`{"ok":tr`, "malformed"},
		{`<html>`, "malformed"},
		{``, "malformed"},
	} {
		err := slackAnswerErr(strings.NewReader(tc.answer))
		var se slack.SlackErrorResponse
		switch {
		case tc.wantErr == "" && err != nil, tc.wantErr != "" && err == nil:
			t.Errorf("%s: %v, want %q", tc.answer, err, tc.wantErr)
		case tc.wantErr == "malformed" && errors.As(err, &se), tc.wantErr != "malformed" && tc.wantErr != "" && (!errors.As(err, &se) || se.Err != tc.wantErr):
			t.Errorf("%s: %v, want %q", tc.answer, err, tc.wantErr)
		}
	}
}
