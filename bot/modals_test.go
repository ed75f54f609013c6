package bot

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

var testRef = approval.MessageRef{Channel: "C0APPROVALS", ID: "1772463845.000100"}

func goldenModals() map[string]slack.ModalViewRequest {
	c := pendingCard()
	question := goldenCards()["question"]
	big := goldenCards()["truncated_args"]
	huge := pendingCard()
	huge.Args = bigArgs(5_000)
	return map[string]slack.ModalViewRequest{
		"modal_args":           ArgsModal(c),
		"modal_args_long":      ArgsModal(big),
		"modal_deny_reason":    DenyReasonModal(c, testRef),
		"modal_edit_args":      EditArgsModal(c, testRef, nil),
		"modal_edit_args_huge": EditArgsModal(huge, testRef, nil),
		"modal_answer":         AnswerModal(question, testRef),
	}
}

func TestModalsGolden(t *testing.T) {
	for name, view := range goldenModals() {
		t.Run(name, func(t *testing.T) {
			checkModal(t, pendingCard(), view)
			checkGolden(t, name, marshalGolden(t, view))
		})
	}
}

func TestModalsHostileInput(t *testing.T) {
	for name, c := range hostileCards(t) {
		t.Run(name, func(t *testing.T) {
			for _, view := range []slack.ModalViewRequest{
				ArgsModal(c),
				DenyReasonModal(c, testRef),
				EditArgsModal(c, testRef, nil),
				EditArgsModal(c, testRef, json.RawMessage(`{"note":"`+strings.Repeat("<!here>`", 10)+`"}`)),
				AnswerModal(c, testRef),
			} {
				checkModal(t, c, view)
				meta, err := DecodeModalMetadata(view.PrivateMetadata)
				if err != nil {
					t.Fatalf("%s: DecodeModalMetadata: %v", view.CallbackID, err)
				}
				if id, ok := ResolveCallID(meta.CallID, []string{"x", c.ToolCallID}); meta.Token != c.Token || !ok || id != c.ToolCallID {
					t.Errorf("%s: metadata names (%q, %.40q), want the card's token and call", view.CallbackID, meta.Token, meta.CallID)
				}
			}
		})
	}
}

// TestArgsModalShowsEverything checks that long arguments are split over
// code blocks that together hold all of them, and that arguments too long
// even for a modal show their start and their end, with a note, instead
// of breaking Slack's limits.
func TestArgsModalShowsEverything(t *testing.T) {
	tests := []struct {
		name     string
		size     int
		wantAll  bool
		wantNote string
	}{
		{"small", 100, true, ""},
		{"10KB", 10_000, true, ""},
		{"100KB", 100_000, true, ""},
		{"1MB", 1_000_000, false, "the rest is too long for Slack"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := pendingCard()
			c.Args = bigArgs(tt.size)
			view := ArgsModal(c)
			checkModal(t, c, view)
			v := toJSON(t, view.Blocks)
			var shown strings.Builder
			end := ""
			for _, s := range texts(v) {
				if strings.HasSuffix(s, "characters not shown …_") {
					end = "next" // the arguments' end follows
				}
				if body, ok := strings.CutPrefix(s, "```\n"); ok && end == "next" {
					end = strings.TrimSuffix(body, "\n```")
				} else if ok {
					shown.WriteString(strings.TrimSuffix(body, "\n```"))
					shown.WriteString("\n") // chunks are cut at line ends
				}
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, c.Args, "", "  "); err != nil {
				t.Fatal(err)
			}
			want := indented.String()
			got := strings.TrimSuffix(shown.String(), "\n")
			if all := got == want; all != tt.wantAll {
				t.Errorf("modal shows all %d characters = %v, want %v (shown %d)", len(want), all, tt.wantAll, len(got))
			}
			if !strings.HasPrefix(want, strings.TrimSuffix(got, "\n")) {
				t.Errorf("shown arguments are not a prefix of the arguments")
			}
			if tt.wantAll == (end != "") || !strings.HasSuffix(want, end) {
				t.Errorf("the modal shows the arguments' end apart %q, want it (a suffix of them) only when it cannot show all", tail(end, 40))
			}
			all := strings.Join(texts(v), "\n")
			if tt.wantNote != "" && !strings.Contains(all, tt.wantNote) {
				t.Errorf("no note %q in a truncated modal", tt.wantNote)
			}
		})
	}
}

func TestEditArgsModal(t *testing.T) {
	tests := []struct {
		name        string
		args        json.RawMessage
		current     json.RawMessage
		wantInitial string // "" means no input: too long to edit
	}{
		{"args", json.RawMessage(`{"path":"a.txt"}`), nil, "{\n  \"path\": \"a.txt\"\n}"},
		{"current wins", json.RawMessage(`{"path":"a.txt"}`), json.RawMessage(`{"path":"b.txt"}`), "{\n  \"path\": \"b.txt\"\n}"},
		{"string args", json.RawMessage(`"{\"n\": 1}"`), nil, "{\n  \"n\": 1\n}"},
		{"null", json.RawMessage(`null`), nil, "{}"},
		{"invisible characters stay equivalent JSON", json.RawMessage(`{"p":"a` + "\u202e" + `b"}`), nil, "{\n  \"p\": \"a\\u202eb\"\n}"},
		{"compact when pretty is too long", json.RawMessage(`{"a":[` + strings.Repeat(`1,`, 1000) + `1]}`), nil, `{"a":[` + strings.Repeat(`1,`, 1000) + `1]}`},
		{"too long", bigArgs(5_000), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := pendingCard()
			c.Args = tt.args
			view := EditArgsModal(c, testRef, tt.current)
			checkModal(t, c, view)
			inputs := find(toJSON(t, view.Blocks), "plain_text_input")
			if tt.wantInitial == "" {
				if len(inputs) != 0 || view.Submit != nil {
					t.Fatalf("modal for too-long arguments has an input or submit")
				}
				return
			}
			if len(inputs) != 1 {
				t.Fatalf("got %d inputs, want 1", len(inputs))
			}
			got := inputs[0]["initial_value"]
			if got != tt.wantInitial {
				t.Errorf("initial_value = %q, want %q", got, tt.wantInitial)
			}
			var a, b any
			if json.Unmarshal([]byte(tt.wantInitial), &a) != nil || json.Unmarshal(agentrunnerArgs(t, tt.current, tt.args), &b) != nil || !cmp.Equal(a, b) {
				t.Errorf("initial_value is not the arguments: %v vs %v", a, b)
			}
		})
	}
}

func agentrunnerArgs(t *testing.T, current, args json.RawMessage) json.RawMessage {
	t.Helper()
	if len(current) == 0 {
		current = args
	}
	obj, err := agentrunner.ToolCallPart{Args: current}.ArgsObject()
	if err != nil {
		t.Fatalf("ArgsObject: %v", err)
	}
	return obj
}

func TestModalInputIDs(t *testing.T) {
	c := pendingCard()
	tests := []struct {
		view         slack.ModalViewRequest
		wantCallback string
		wantBlock    string
		wantAction   string
	}{
		{DenyReasonModal(c, testRef), CallbackDenyReason, BlockIDDenyReason, ActionIDDenyReasonInput},
		{EditArgsModal(c, testRef, nil), CallbackEditArgs, BlockIDEditArgs, ActionIDEditArgsInput},
		{AnswerModal(c, testRef), CallbackAnswer, BlockIDAnswer, ActionIDAnswerInput},
	}
	for _, tt := range tests {
		t.Run(tt.wantCallback, func(t *testing.T) {
			if tt.view.CallbackID != tt.wantCallback {
				t.Errorf("callback_id = %q, want %q", tt.view.CallbackID, tt.wantCallback)
			}
			inputs := find(toJSON(t, tt.view.Blocks), "input")
			if len(inputs) != 1 {
				t.Fatalf("got %d input blocks, want 1", len(inputs))
			}
			el := inputs[0]["element"].(map[string]any)
			if inputs[0]["block_id"] != tt.wantBlock || el["action_id"] != tt.wantAction || el["multiline"] != true {
				t.Errorf("input = block %v action %v multiline %v, want %s %s true", inputs[0]["block_id"], el["action_id"], el["multiline"], tt.wantBlock, tt.wantAction)
			}
			if tt.view.Submit == nil {
				t.Errorf("modal with an input has no submit button")
			}
			meta, err := DecodeModalMetadata(tt.view.PrivateMetadata)
			if err != nil {
				t.Fatal(err)
			}
			want := ModalMetadata{Token: c.Token, CallID: c.ToolCallID, Message: testRef}
			if diff := cmp.Diff(want, meta); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeModalMetadataRefusesGarbage(t *testing.T) {
	for _, s := range []string{
		"",
		"{}",
		"null",
		"[]",
		`{"v":2,"t":"tok","c":"call"}`,
		`{"v":1,"t":"","c":"call"}`,
		`{"v":1,"t":"tok","c":"call","admin":true}`,
		`{"v":1,"t":"tok","c":"call"} {"v":1}`,
		`{"v":1,"t":"` + strings.Repeat("x", MaxTokenLen+1) + `","c":"call"}`,
		strings.Repeat("{", 20_000),
		"not json",
	} {
		if _, err := DecodeModalMetadata(s); !errors.Is(err, ErrInvalidModalMetadata) {
			t.Errorf("DecodeModalMetadata(%.60q) error = %v, want ErrInvalidModalMetadata", s, err)
		}
	}
}

// checkModal checks a modal against Slack's limits, slack-go's round trip
// and the escaping rules.
func checkModal(t *testing.T, c Card, view slack.ModalViewRequest) {
	t.Helper()
	if view.Type != slack.VTModal {
		t.Errorf("type = %q, want modal", view.Type)
	}
	for what, obj := range map[string]*slack.TextBlockObject{"title": view.Title, "submit": view.Submit, "close": view.Close} {
		if obj == nil {
			if what == "title" {
				t.Errorf("modal has no title")
			}
			continue
		}
		if obj.Type != slack.PlainTextType || textLen(obj.Text) > maxModalTitle || obj.Text == "" {
			t.Errorf("%s = %s %q, want plain_text of 1..%d characters", what, obj.Type, obj.Text, maxModalTitle)
		}
	}
	if n := textLen(view.PrivateMetadata); n > maxMetadata || n == 0 {
		t.Errorf("private_metadata is %d characters, want 1..%d", n, maxMetadata)
	}
	if n := len(view.CallbackID); n == 0 || n > 255 {
		t.Errorf("callback_id is %d characters, want 1..255", n)
	}
	if n := len(view.Blocks.BlockSet); n > maxModalBlocks {
		t.Errorf("%d blocks, Slack allows %d in a modal", n, maxModalBlocks)
	}
	roundTrip(t, view, &slack.ModalViewRequest{})
	v := toJSON(t, view.Blocks)
	checkLimits(t, v)
	checkMentions(t, v, allowedMentions(c))
	checkHostileInCode(t, v)
}
