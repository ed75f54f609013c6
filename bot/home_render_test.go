package bot

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

func homeGoldenContent() map[string]HomeContent {
	ask := pendingCard()
	ask.Confirm = true
	ask.GrantChoices = []time.Duration{time.Hour, 8 * time.Hour}
	ask.Rule = approval.RuleTool
	escalated := pendingCard()
	escalated.ToolCallID = "call_2"
	escalated.ToolName = "refund"
	escalated.Confirmation = "Refund *everything* to <@U0EVIL> & <!channel>?"
	escalated.RequiredApprovals = 2
	escalated.Votes = []approval.Vote{{By: "U0BOB"}}
	question := pendingCard()
	question.ToolCallID = "call_3"
	question.Kind = agentrunner.KindQuestion
	question.ToolName = "ask_human"
	question.Confirmation = "Which region should the backup go to?"
	card := approval.MessageRef{Channel: "C0APPROVALS", ID: "1772463845.000100"}
	full := HomeContent{
		Notice: "✅ You approved `delete_file` (requested by <@U0ALICE>); its card says so too.",
		Waiting: []HomeItem{
			{Card: ask, Message: card},
			{Card: escalated, Message: card, Escalated: true},
			{Card: question, Message: card},
		},
		MoreWaiting: 4,
		Requests:    []HomeItem{{Card: pendingCard(), Message: card}, {Card: pendingCard()}},
		Grants: []HomeGrant{{ToolLabel: "refund", Grant: approval.Grant{
			ID: "3f2a9c", Route: "refunds", Requester: "U0CAROL", Tool: "refund",
			Args: json.RawMessage(`{"amount":25,"order":"A-1"}`), By: "U0ALICE", CreatedAt: created, Until: created.Add(8 * time.Hour),
		}}, {ToolLabel: "Bash", Grant: approval.Grant{
			ID: "9c1d0e", Route: "coding-agents", Requester: "api:laptop", Name: "Claude Code (/home/dev/shop)", Tool: "Bash",
			Args: json.RawMessage(`{"command":"npm test"}`), By: "U0ALICE", CreatedAt: created, Until: created.Add(time.Hour),
		}}},
	}
	batched := pendingCard()
	batched.Batch = &approval.BatchView{Count: 2, Tools: []string{"delete_file", "refund"}}
	batchedToo := escalated
	batchedToo.Votes, batchedToo.Batch = nil, batched.Batch
	withBatch := HomeContent{Waiting: []HomeItem{{Card: batched, Message: card}, {Card: batchedToo, Message: card}}}
	passkeys := full
	passkeys.Passkeys = &HomePasskeys{List: []PasskeyInfo{
		{ID: "cred-1", Name: "MacBook Touch ID", Method: routing.StepUpWebAuthn, Added: created, LastUsed: created.Add(time.Hour)},
		{ID: "cred-2", Name: "YubiKey <!channel>", Added: created},
		{ID: "totp", Method: routing.StepUpTOTP, Added: created},
	}}
	return map[string]HomeContent{"home": full, "home_empty": {}, "home_batch": withBatch, "home_passkeys": passkeys,
		"home_passkeys_none": {Passkeys: &HomePasskeys{}}, "home_passkeys_failed": {Passkeys: &HomePasskeys{Failed: true}}}
}

func TestHomeBlocksGolden(t *testing.T) {
	for name, h := range homeGoldenContent() {
		t.Run(name, func(t *testing.T) {
			view := HomeView(h)
			checkView(t, view)
			checkGolden(t, name, marshalGolden(t, view))
		})
	}
}

// checkView checks a Home view against Slack's limits, as the fake does.
func checkView(t *testing.T, view slack.HomeTabViewRequest) {
	t.Helper()
	if n := len(view.Blocks.BlockSet); n > maxViewBlocks {
		t.Errorf("%d blocks, Slack allows %d in a view", n, maxViewBlocks)
	}
	roundTrip(t, view.Blocks, &slack.Blocks{})
	checkLimits(t, toJSON(t, view.Blocks))
}

// What a person sees first on their Home, and which buttons: the card's
// action ids and values, the confirm dialog, grant buttons; Revoke with the
// grant's id; nothing the model wrote can mention anyone.
func TestHomeBlocksAtAGlance(t *testing.T) {
	h := homeGoldenContent()["home"]
	text := string(toJSONBytes(t, HomeView(h)))
	for _, want := range []string{
		"⏳ Waiting for you", "📤 Your requests", "🔓 Your grants",
		"Requested by <@U0ALICE> in <#C0SUPPORT>", "card in <#C0APPROVALS>", "🚨 escalated to you",
		"1 of 2 approvals", "…and 4 more waiting for you", "Why: `delete_file` always needs approval.",
		`"action_id":"approve","value":"` + EncodeAction(testToken, "call_1") + `"`,
		`"action_id":"approve_for_480m"`, `"action_id":"revoke_grant"`, `"value":"3f2a9c"`, "Revoke this grant?",
		"no card yet", "✅ You approved", "`Bash` for `Claude Code (/home/dev/shop)`, says `laptop`",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the Home does not show %q", want)
		}
	}
	for _, bad := range []string{"<@U0EVIL>", "<!channel>"} {
		if strings.Contains(text, bad) {
			t.Errorf("the Home lets the model's text mention: %s", bad)
		}
	}
	// The question has no Approve/Deny: it is answered on its card.
	if n := strings.Count(text, `"action_id":"deny"`); n != 2 {
		t.Errorf("%d Deny buttons, want 2 (the approvals, not the question)", n)
	}
	empty := string(toJSONBytes(t, HomeView(HomeContent{})))
	for _, want := range []string{"Nothing waits for your decision", "None of your requests waits", "You have no grant in force"} {
		if !strings.Contains(empty, want) {
			t.Errorf("the empty Home does not say %q", want)
		}
	}
}

// The fullest Home (every list at its bound, 100 grants) stays within
// Slack's 100 blocks.
func TestHomeBlocksFitAView(t *testing.T) {
	var h HomeContent
	c := pendingCard()
	c.GrantChoices = []time.Duration{time.Hour}
	c.Confirmation = strings.Repeat("x", 5000)
	for range approval.MaxHomeCalls {
		h.Waiting = append(h.Waiting, HomeItem{Card: c})
		h.Requests = append(h.Requests, HomeItem{Card: c})
	}
	for range 100 {
		h.Grants = append(h.Grants, HomeGrant{Grant: approval.Grant{ID: "g", Tool: "t", Args: json.RawMessage(`{}`), Until: created}})
	}
	h.MoreWaiting, h.MoreRequests, h.Partial, h.Notice = 7, 7, true, strings.Repeat("n", 4000)
	view := HomeView(h)
	checkView(t, view)
	if last := toJSONBytes(t, view.Blocks.BlockSet[len(view.Blocks.BlockSet)-1]); !strings.Contains(string(last), "may be incomplete") {
		t.Errorf("the last block is %s, want the partial note (nothing cut)", last)
	}
	// With the most passkeys a person can have (and more), "Your passkeys"
	// is whole, Add a passkey last.
	h.Passkeys = &HomePasskeys{}
	for range maxHomePasskeys + 5 {
		h.Passkeys.List = append(h.Passkeys.List, PasskeyInfo{ID: strings.Repeat("i", 1500), Name: strings.Repeat("n", 500), Added: created})
	}
	view = HomeView(h)
	checkView(t, view)
	text := string(toJSONBytes(t, view.Blocks.BlockSet))
	if n := strings.Count(text, `"action_id":"passkey_remove"`); n != maxHomePasskeys {
		t.Errorf("%d Remove buttons, want %d", n, maxHomePasskeys)
	}
	if last := toJSONBytes(t, view.Blocks.BlockSet[len(view.Blocks.BlockSet)-1]); !strings.Contains(string(last), `"action_id":"passkey_add"`) {
		t.Errorf("the last block is %s, want Add a passkey", last)
	}
}

// "Your passkeys": each with its Remove (its id as the value, Slack's
// confirm dialog), Add a passkey; a name someone typed never mentions.
func TestHomePasskeysAtAGlance(t *testing.T) {
	text := string(toJSONBytes(t, HomeView(homeGoldenContent()["home_passkeys"])))
	for _, want := range []string{
		"Your passkeys", "*MacBook Touch ID* · added", "last used <!date^", "never used", "Authenticator app (one-time codes)",
		`"action_id":"passkey_remove","value":"cred-1"`, "Remove this passkey?", `"action_id":"passkey_add"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the Home does not show %q", want)
		}
	}
	if strings.Contains(text, "<!channel>") {
		t.Error("a passkey's name mentions everyone")
	}
	if strings.Contains(string(toJSONBytes(t, HomeView(HomeContent{}))), "passkey") {
		t.Error("a Home without step-up set up shows passkeys")
	}
}

func toJSONBytes(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b)))
}
