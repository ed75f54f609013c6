package bot

import (
	"encoding/json"
	"flag"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// Fixed times, so golden files do not change.
var (
	created = time.Date(2026, 3, 2, 15, 4, 5, 0, time.UTC)
	expires = created.Add(time.Hour)
	decided = created.Add(10 * time.Minute)
)

const testToken = "q2Xm5b0Yc1iJzv9p1W3kL8a7sD4fG6hJ2kL0zX9cV8b" // 43 base64url chars, like agentrunner.NewToken

// pendingCard is an ordinary approval waiting for a decision.
func pendingCard() Card {
	return Card{
		Token:             testToken,
		ToolCallID:        "call_1",
		Kind:              agentrunner.KindApproval,
		ToolName:          "delete_file",
		Args:              json.RawMessage(`{"path":"temp.txt","force":true}`),
		Confirmation:      `Run delete_file({"path":"temp.txt","force":true})?`,
		Requester:         "U0ALICE",
		RequesterIsUser:   true,
		SourceChannel:     "C0SUPPORT",
		Route:             "files",
		Mentions:          []string{"S0OPS"},
		CreatedAt:         created,
		ExpiresAt:         expires,
		RequiredApprovals: 1,
		State:             approval.CallPending,
	}
}

// goldenCards are the cards whose rendering is pinned in testdata/golden.
func goldenCards() map[string]Card {
	cards := map[string]Card{}
	add := func(name string, edit func(c *Card)) {
		c := pendingCard()
		edit(&c)
		cards[name] = c
	}
	add("pending", func(c *Card) {})
	add("pending_quorum", func(c *Card) {
		c.RequiredApprovals = 2
		c.Votes = []approval.Vote{{By: "U0BOB", At: decided}}
	})
	add("pending_deny_reason_edit", func(c *Card) {
		c.AllowDenyReason, c.AllowEdit = true, true
	})
	add("pending_confirm", func(c *Card) { c.Confirm = true })
	add("pending_batch", func(c *Card) {
		c.Batch = &approval.BatchView{Count: 3, Tools: []string{"delete_file", "refund_order", "delete_file"}}
	})
	add("pending_grants", func(c *Card) { c.GrantChoices = []time.Duration{time.Hour, 8 * time.Hour} })
	add("pending_why", func(c *Card) {
		c.Rule, c.AutoApprove = approval.RuleArguments, "args.amount <= 100"
	})
	add("pending_why_policy_error", func(c *Card) {
		c.Rule, c.AutoApprove = approval.RuleTool, "args.amount <= 100"
		c.PolicyError = "route refunds: no such key: amount"
	})
	add("pending_api_client", func(c *Card) {
		c.Requester, c.RequesterIsUser, c.SourceChannel = "billing-agent", false, ""
		c.Context = "Customer #4411 asked to remove their export."
		c.Mentions = nil
	})
	add("pending_api_client_claim", func(c *Card) {
		c.Requester, c.RequesterIsUser, c.SourceChannel = "bench", false, ""
		c.RequesterClaim, c.Rule = "carol", approval.RuleClient
		c.Mentions = nil
	})
	add("pending_permission_prompt", func(c *Card) {
		c.ToolName, c.PromptAgent, c.Confirmation = "Bash", "Claude Code", ""
		c.Args = json.RawMessage(`{"command":"rm -rf build/","description":"Remove the build directory","timeout":60000}`)
		c.Requester, c.RequesterIsUser, c.SourceChannel = "laptop via claude-code 2.1.3", false, ""
		c.Mentions = nil
	})
	add("question", func(c *Card) {
		c.Kind = agentrunner.KindQuestion
		c.ToolName = "ask_human"
		c.Args = json.RawMessage(`{"question":"Which region should the backup go to?"}`)
		c.Confirmation = "Which region should the backup go to?"
	})
	add("external", func(c *Card) {
		c.Kind = agentrunner.KindExternal
		c.ToolName = "run_batch_job"
		c.Args = json.RawMessage(`{"job":"nightly-export"}`)
		c.Confirmation = `Run run_batch_job({"job":"nightly-export"})?`
		c.Mentions = nil
	})
	add("approved", func(c *Card) {
		c.State, c.DecidedBy, c.DecidedAt = approval.CallApproved, "U0BOB", decided
	})
	add("approved_stepup", func(c *Card) {
		c.State, c.DecidedBy, c.DecidedAt = approval.CallApproved, "U0BOB", decided
		c.StepUp = &approval.StepUp{Method: "webauthn", AMR: []string{"hwk"}, CredentialID: "AQID", At: decided}
	})
	add("approved_stepup_totp", func(c *Card) {
		c.State, c.DecidedBy, c.DecidedAt = approval.CallApproved, "U0BOB", decided
		c.StepUp = &approval.StepUp{Method: "totp", AMR: []string{"otp"}, CredentialID: "totp", At: decided}
	})
	add("approved_quorum", func(c *Card) {
		c.RequiredApprovals = 2
		c.Votes = []approval.Vote{{By: "U0BOB", At: decided}, {By: "U0CAROL", At: decided}}
		c.State, c.DecidedBy, c.DecidedAt = approval.CallApproved, "U0CAROL", decided
	})
	add("approved_override", func(c *Card) {
		c.State, c.DecidedBy, c.DecidedAt = approval.CallApproved, "U0BOB", decided
		c.OverrideArgs = json.RawMessage(`{"path":"temp.txt","force":false}`)
	})
	add("approved_policy", func(c *Card) {
		c.State, c.DecidedBy, c.DecidedAt = approval.CallApproved, "policy:files", decided
	})
	add("denied_reason", func(c *Card) {
		c.State, c.DecidedBy, c.DecidedAt = approval.CallDenied, "U0BOB", decided
		c.Reason = "Not during the freeze; try again Monday."
	})
	add("expired", func(c *Card) {
		c.State = approval.CallExpired
	})
	add("cancelled", func(c *Card) {
		c.State, c.DecidedBy, c.DecidedAt = approval.CallCancelled, "billing-agent", decided
		c.Reason = "The run was cancelled by its client."
	})
	add("answered", func(c *Card) {
		c.Kind = agentrunner.KindQuestion
		c.ToolName = "ask_human"
		c.Args = json.RawMessage(`{"question":"Which region should the backup go to?"}`)
		c.Confirmation = "Which region should the backup go to?"
		c.State, c.DecidedBy, c.DecidedAt = approval.CallAnswered, "U0BOB", decided
		c.Answer = json.RawMessage(`"eu-west-1, please"`)
	})
	add("external_result", func(c *Card) {
		c.Kind = agentrunner.KindExternal
		c.ToolName = "run_batch_job"
		c.Args = json.RawMessage(`{"job":"nightly-export"}`)
		c.Confirmation = `Run run_batch_job({"job":"nightly-export"})?`
		c.State, c.DecidedBy, c.DecidedAt = approval.CallAnswered, "batch-runner", decided
		c.Answer = json.RawMessage(`{"rows":1200,"file":"s3://exports/nightly.csv"}`)
	})
	add("failed", func(c *Card) {
		c.State, c.DecidedAt = approval.CallFailed, decided
		c.Reason = "Slack rejected the update: channel_not_found"
	})
	add("tool_ran", func(c *Card) {
		c.State, c.DecidedBy, c.DecidedAt = approval.CallApproved, "U0BOB", decided
		c.Outcome = &approval.Outcome{Status: OutcomeRan, Summary: "Deleted temp.txt (2 KB)."}
	})
	add("tool_failed", func(c *Card) {
		c.State, c.DecidedBy, c.DecidedAt = approval.CallApproved, "U0BOB", decided
		c.Outcome = &approval.Outcome{Status: OutcomeFailed, Summary: "permission denied: temp.txt"}
	})
	// The program that asked reported that it did not run the approved
	// call (POST /v1/approvals/{token}/outcomes).
	add("tool_not_run", func(c *Card) {
		c.State, c.DecidedBy, c.DecidedAt = approval.CallApproved, "U0BOB", decided
		c.Outcome = &approval.Outcome{Status: approval.OutcomeNotRun, Summary: "Invalid input for tool delete_file: Approved tool input does not match the validated schema output."}
	})
	// A command padded with 4,000 spaces before what it really does,
	// asked for by approval_prompt and by a hook (render_ends_test.go).
	padded := paddedCards(strings.Repeat(" ", 4000))
	cards["pending_permission_prompt_padded"] = padded["approval_prompt"]
	cards["pending_hook_padded"] = padded["hook"]
	add("truncated_args", func(c *Card) {
		c.Args = bigArgs(10_000)
		c.Confirmation = "Run import_rows with 10 KB of rows?"
		c.ToolName = "import_rows"
	})
	return cards
}

// bigArgs returns a JSON object of about n bytes of ordinary rows.
func bigArgs(n int) json.RawMessage {
	var rows []map[string]any
	for size := 0; size < n; size += 60 {
		i := len(rows)
		rows = append(rows, map[string]any{"id": i, "name": fmt.Sprintf("customer-%04d", i), "ok": i%3 == 0})
	}
	b, err := json.Marshal(map[string]any{"rows": rows})
	if err != nil {
		panic(err)
	}
	return b
}

func TestApprovalBlocksGolden(t *testing.T) {
	for name, c := range goldenCards() {
		t.Run(name, func(t *testing.T) {
			blocks := ApprovalBlocks(c)
			checkMessage(t, c, blocks)
			got := marshalGolden(t, map[string]any{
				"text":   ApprovalText(c),
				"blocks": slack.Blocks{BlockSet: blocks},
			})
			checkGolden(t, name, got)
		})
	}
}

// TestApprovalBlocksAtAGlance checks what an approver sees first and which
// buttons they get, for every state.
func TestApprovalBlocksAtAGlance(t *testing.T) {
	tests := []struct {
		card        string
		wantHeader  string
		wantActions []string
		wantText    []string // substrings of the rendered text, in any block
	}{
		{"pending", "⏳ Approval needed: delete_file", []string{"approve", "deny"},
			[]string{"Requested by <@U0ALICE> in <#C0SUPPORT>", "Expires <!date^1772467445^{date_short_pretty} at {time}|2026-03-02 16:04 UTC>", "Approvers: <!subteam^S0OPS>", "\"path\": \"temp.txt\""}},
		{"pending_quorum", "⏳ Approval needed: delete_file", []string{"approve", "deny"}, []string{"1 of 2 approvals: <@U0BOB>"}},
		{"pending_deny_reason_edit", "⏳ Approval needed: delete_file", []string{"approve", "deny", "deny_reason", "edit"}, nil},
		{"pending_api_client", "⏳ Approval needed: delete_file", []string{"approve", "deny"},
			[]string{"Requested by `billing-agent` (API)", "Context: Customer #4411 asked to remove their export."}},
		{"question", "❓ Question: ask_human", []string{"answer"}, []string{"Which region should the backup go to?", "Who can answer: <!subteam^S0OPS>"}},
		{"external", "⏳ Waiting for result: run_batch_job", nil, []string{"Waiting for an external result"}},
		{"approved", "✅ Approved: delete_file", nil, []string{"✅ *Approved* by <@U0BOB> · <!date^1772464445^"}},
		{"approved_stepup", "✅ Approved: delete_file", nil, []string{"✅ *Approved* by <@U0BOB> · <!date^1772464445^{date_short_pretty} at {time}|2026-03-02 15:14 UTC> · verified with a passkey"}},
		{"approved_stepup_totp", "✅ Approved: delete_file", nil, []string{"✅ *Approved* by <@U0BOB> · <!date^1772464445^{date_short_pretty} at {time}|2026-03-02 15:14 UTC> · verified with a one-time code"}},
		{"approved_quorum", "✅ Approved: delete_file", nil, []string{"2 of 2 approvals: <@U0BOB>, <@U0CAROL>"}},
		{"approved_override", "✅ Approved: delete_file", nil,
			[]string{"with edited arguments", "*Arguments as requested*", "*Arguments as approved (edited)*", "\"force\": false"}},
		{"approved_policy", "✅ Approved: delete_file", nil, []string{"by policy `files`"}},
		{"denied_reason", "❌ Denied: delete_file", nil, []string{"❌ *Denied* by <@U0BOB>", "Reason: “Not during the freeze; try again Monday.”"}},
		{"expired", "⌛ Expired: delete_file", nil, []string{"⌛ *Expired* — no decision arrived by <!date^1772467445^"}},
		{"cancelled", "🚫 Cancelled: delete_file", nil, []string{"🚫 *Cancelled* by `billing-agent`", "Reason: “The run was cancelled by its client.”"}},
		{"answered", "💬 Answered: ask_human", nil, []string{"💬 *Answered* by <@U0BOB>", "Answer: eu-west-1, please"}},
		{"external_result", "📥 Result received: run_batch_job", nil, []string{"📥 *Result received* from `batch-runner`", "*Result*\n```\n{\n  \"rows\": 1200"}},
		{"failed", "⚠️ Failed: delete_file", nil, []string{"⚠️ *Failed*", "Error: “Slack rejected the update: channel_not_found”"}},
		{"tool_ran", "✅ Approved: delete_file", nil, []string{"🟢 The tool ran: Deleted temp.txt (2 KB)."}},
		{"tool_failed", "✅ Approved: delete_file", nil, []string{"🔴 The tool failed: permission denied: temp.txt"}},
		{"truncated_args", "⏳ Approval needed: import_rows", []string{"view_args", "approve", "deny"},
			[]string{"Showing the first 1,", "and the last ", "characters not shown", "Use *View all arguments* to see the rest."}},
	}
	cards := goldenCards()
	for _, tt := range tests {
		t.Run(tt.card, func(t *testing.T) {
			c, ok := cards[tt.card]
			if !ok {
				t.Fatalf("no golden card %q", tt.card)
			}
			blocks := ApprovalBlocks(c)
			v := toJSON(t, slack.Blocks{BlockSet: blocks})
			first := v.([]any)[0].(map[string]any)
			if first["type"] != "header" {
				t.Fatalf("first block is %v, want header", first["type"])
			}
			if got := first["text"].(map[string]any)["text"]; got != tt.wantHeader {
				t.Errorf("header = %q, want %q", got, tt.wantHeader)
			}
			if got := actionIDs(v); !cmp.Equal(got, tt.wantActions) {
				t.Errorf("buttons = %q, want %q", got, tt.wantActions)
			}
			all := strings.Join(texts(v), "\n")
			for _, want := range tt.wantText {
				if !strings.Contains(all, want) {
					t.Errorf("rendered text does not contain %q; text:\n%s", want, all)
				}
			}
		})
	}
}

// hostile is user- and model-controlled text that tries to ping people,
// inject formatting and close code blocks. EVIL marks it, so tests can find
// where it ended up.
const hostile = "EVIL <!channel> <!here> <!everyone> @here @channel <@U123> <@W999|boss> <#C1> <!subteam^S1> " +
	"<https://evil.example|click me> *bold* _italic_ ~strike~ `code` ``` closing ``` & &amp; &lt; > " +
	"🙂👩‍👩‍👧 שלום مرحبا e\u0301 \u202eRTL\u202c zero\u200bwidth \x01 EVIL"

func hostileArgs(t testing.TB, size int) json.RawMessage {
	t.Helper()
	m := map[string]any{"note": hostile, "path": "`/etc/passwd` ```\n<!channel>"}
	for i := 0; len(mustMarshal(t, m)) < size; i++ {
		m[fmt.Sprintf("k%03d", i)] = strings.Repeat("é🙂\u0301ש<&>`*_", 8) + hostile
	}
	return mustMarshal(t, m)
}

// hostileCards are every state and kind with hostile text wherever a card
// carries text from users, models or API clients.
func hostileCards(t testing.TB) map[string]Card {
	t.Helper()
	base := Card{
		Token:             testToken,
		ToolCallID:        strings.Repeat("call-🙂-<!here>-", 400), // 6,000 characters
		Kind:              agentrunner.KindApproval,
		ToolName:          strings.Repeat(hostile, 10_000/len(hostile)+1)[:10_000], // cut inside a character: invalid UTF-8
		Args:              hostileArgs(t, 10_000),
		Confirmation:      strings.Repeat(hostile, 30),
		Requester:         "U0ALICE",
		RequesterIsUser:   true,
		SourceChannel:     "C0SUPPORT",
		Context:           hostile,
		Route:             "route " + hostile,
		Mentions:          []string{"S0OPS", "<!channel>", "here", "S0OPS"},
		CreatedAt:         created,
		ExpiresAt:         expires,
		RequiredApprovals: 3,
		Votes:             []approval.Vote{{By: "U0BOB", At: decided}, {By: "<!everyone>", At: decided}},
		AllowDenyReason:   true,
		AllowEdit:         true,
		Confirm:           true,
		Rule:              approval.RuleClient,
		PolicyError:       strings.Repeat(hostile, 40),
		AutoApprove:       strings.Repeat(hostile, 40),
		DecidedBy:         "U0CAROL",
		DecidedAt:         decided,
		Reason:            strings.Repeat(hostile, 40),
		OverrideArgs:      hostileArgs(t, 12_000),
		Answer:            mustMarshal(t, strings.Repeat(hostile, 40)),
		Outcome:           &approval.Outcome{Status: OutcomeRan, Summary: strings.Repeat(hostile, 10)},
	}
	cards := map[string]Card{}
	kinds := []agentrunner.CallKind{agentrunner.KindApproval, agentrunner.KindQuestion, agentrunner.KindExternal}
	states := []approval.CallStatus{approval.CallPending, approval.CallApproved, approval.CallDenied, approval.CallAnswered, approval.CallFailed, approval.CallExpired, approval.CallCancelled, "weird " + approval.CallStatus(hostile)}
	for _, k := range kinds {
		for _, s := range states {
			c := base
			c.Kind, c.State = k, s
			cards[fmt.Sprintf("%s/%.20s", k, s)] = c
		}
	}
	api := base
	api.Requester, api.RequesterIsUser, api.SourceChannel = hostile, false, "<!here>"
	api.DecidedBy, api.State = "policy:"+hostile, approval.CallDenied
	cards["api-client"] = api
	fake := base
	fake.Requester = "<!channel>" // claims to be a Slack user id
	fake.DecidedBy, fake.State = hostile, approval.CallApproved
	fake.Answer = mustMarshal(t, map[string]any{"x": hostile})
	fake.Outcome = &approval.Outcome{Status: hostile, Summary: hostile}
	cards["fake-user"] = fake
	for name, ch := range hostileChanges(t) {
		c := base
		c.State, c.Change = approval.CallPending, ch
		cards["change/"+name] = c
		c.State = approval.CallDenied
		cards["change/"+name+"/denied"] = c
		c.State, c.EditedChange = approval.CallApproved, ch
		cards["change/"+name+"/approved-edited"] = c
	}
	return cards
}

func TestApprovalBlocksHostileInput(t *testing.T) {
	for name, c := range hostileCards(t) {
		t.Run(name, func(t *testing.T) {
			blocks := ApprovalBlocks(c)
			checkMessage(t, c, blocks)
			v := toJSON(t, slack.Blocks{BlockSet: blocks})
			// Every button carries the call, even with a 5,600-character id.
			for _, b := range find(v, "button") {
				tok, ref, err := DecodeAction(b["value"].(string))
				if err != nil {
					t.Fatalf("button %v: DecodeAction: %v", b["action_id"], err)
				}
				if id, ok := ResolveCallID(ref, []string{"call_other", c.ToolCallID}); tok != c.Token || !ok || id != c.ToolCallID {
					t.Errorf("button %v carries (%q, %.40q), want the card's token and call", b["action_id"], tok, ref)
				}
			}
		})
	}
}

// TestApprovalText checks the notification text: short, escaped, and
// mentioning no one.
func TestApprovalText(t *testing.T) {
	cards := hostileCards(t)
	for name, c := range goldenCards() {
		cards["golden/"+name] = c
	}
	for name, c := range cards {
		t.Run(name, func(t *testing.T) {
			got := ApprovalText(c)
			if n := textLen(got); n > maxFallbackText || n == 0 {
				t.Errorf("ApprovalText is %d characters, want 1..%d", n, maxFallbackText)
			}
			if !utf8.ValidString(got) {
				t.Errorf("ApprovalText is not valid UTF-8: %q", got)
			}
			if strings.ContainsAny(got, "<>") {
				t.Errorf("ApprovalText contains < or >: %q", got)
			}
			checkEntities(t, got)
			for i, r := range got {
				if strings.ContainsRune("*_~`", r) && !strings.HasPrefix(got[i+1:], "\u200b") {
					t.Errorf("ApprovalText has a bare %q at %d: %q", r, i, got)
					break
				}
			}
		})
	}
	c := pendingCard()
	want := "⏳ Approval needed: delete_\u200bfile — Run delete_\u200bfile({\"path\":\"temp.txt\",\"force\":true})?"
	if got := ApprovalText(c); got != want {
		t.Errorf("ApprovalText(pending) = %q, want %q", got, want)
	}
}

func TestFitCodeNeverSplitsCharacters(t *testing.T) {
	s := "a🙂é\u0301שלום&<>```x`\n{\"k\": \"👩‍👩‍👧\"}\n&amp;"
	for max := 0; max <= textLen(s)*5; max++ {
		out, rest := fitCode(s, max)
		if textLen(out) > max {
			t.Fatalf("fitCode(max %d) = %d characters", max, textLen(out))
		}
		if !utf8.ValidString(out) {
			t.Fatalf("fitCode(max %d) split a character: %q", max, out)
		}
		if strings.Contains(out, "``") {
			t.Fatalf("fitCode(max %d) left a backtick run: %q", max, out)
		}
		back := strings.NewReplacer("\u200b", "", "&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(out)
		if got := back + rest; got != s && back+"\n"+rest != s {
			t.Fatalf("fitCode(max %d): shown %q + rest %q is not the input", max, back, rest)
		}
	}
}

func TestFitNeverSplitsEscapes(t *testing.T) {
	s := "<&>🙂e\u0301ab"
	for max := 1; max <= 30; max++ {
		got := fit(s, max, "…", escapeRune)
		if textLen(got) > max {
			t.Errorf("fit(max %d) = %q: %d characters", max, got, textLen(got))
		}
		if !utf8.ValidString(got) {
			t.Errorf("fit(max %d) = %q: invalid UTF-8", max, got)
		}
		checkEntities(t, got)
	}
}

func TestThousands(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {10312, "10,312"}, {1234567, "1,234,567"}, {-2400, "-2,400"}}
	for _, tt := range tests {
		if got := thousands(tt.n); got != tt.want {
			t.Errorf("thousands(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

var (
	angleRE = regexp.MustCompile(`<[^<>]*>`)
	dateRE  = regexp.MustCompile(`^<!date\^\d+\^\{date_short_pretty\} at \{time\}\|\d{4}-\d\d-\d\d \d\d:\d\d UTC>$`)
)

var codeRE = regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")

// BenchmarkApprovalBlocks measures rendering an ordinary card and a card
// with 10 KB of hostile arguments, a 10,000-byte tool name and a long id.
func BenchmarkApprovalBlocks(b *testing.B) {
	for name, c := range map[string]Card{"ordinary": pendingCard(), "hostile": hostileCards(b)["approval/pending"]} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = ApprovalBlocks(c)
				_ = ApprovalText(c)
			}
		})
	}
}

// BenchmarkArgsModal measures splitting 100 KB of arguments over a modal.
func BenchmarkArgsModal(b *testing.B) {
	c := pendingCard()
	c.Args = bigArgs(100_000)
	b.ReportAllocs()
	for b.Loop() {
		_ = ArgsModal(c)
	}
}

// TestConfirmDialog checks the Approve button of a confirm: true route: it
// asks first, naming the tool and its arguments on one line, within
// Slack's limits on a confirm dialog however long they are; Deny and the
// other buttons do not ask.
func TestConfirmDialog(t *testing.T) {
	c := pendingCard()
	c.Confirm, c.AllowDenyReason = true, true
	v := toJSON(t, slack.Blocks{BlockSet: ApprovalBlocks(c)})
	buttons := find(v, "button")
	var confirms int
	for _, b := range buttons {
		d, ok := b["confirm"].(map[string]any)
		if b["action_id"] != ActionIDApprove {
			if ok {
				t.Errorf("button %v asks for confirmation; only Approve should", b["action_id"])
			}
			continue
		}
		if !ok {
			t.Fatalf("Approve has no confirm dialog: %v", b)
		}
		confirms++
		text := func(k string) string { return d[k].(map[string]any)["text"].(string) }
		if got, want := text("title"), "Approve delete_file?"; got != want {
			t.Errorf("title %q, want %q", got, want)
		}
		if got, want := text("text"), `Run delete_file({"path":"temp.txt","force":true})?`; got != want {
			t.Errorf("text %q, want %q", got, want)
		}
		if text("confirm") != "Approve" || text("deny") != "Cancel" || d["style"] != "primary" {
			t.Errorf("dialog buttons %q / %q style %v, want Approve / Cancel, primary", text("confirm"), text("deny"), d["style"])
		}
	}
	if confirms != 1 {
		t.Errorf("%d Approve buttons with a dialog, want 1", confirms)
	}

	c.Confirm = false
	for _, b := range find(toJSON(t, slack.Blocks{BlockSet: ApprovalBlocks(c)}), "button") {
		if _, ok := b["confirm"]; ok {
			t.Errorf("a route without confirm asks on %v", b["action_id"])
		}
	}

	// Long and hostile: the dialog stays inside Slack's limits, on one line.
	c = pendingCard()
	c.Confirm = true
	c.ToolName = strings.Repeat("t\n<!here>", 100)
	c.Confirmation = strings.Repeat("rm -rf /\n", 200)
	for _, b := range find(toJSON(t, slack.Blocks{BlockSet: ApprovalBlocks(c)}), "button") {
		d, ok := b["confirm"].(map[string]any)
		if !ok {
			continue
		}
		title := d["title"].(map[string]any)["text"].(string)
		text := d["text"].(map[string]any)["text"].(string)
		if n := utf8.RuneCountInString(title); n > maxConfirmTitle {
			t.Errorf("title is %d characters, Slack allows %d", n, maxConfirmTitle)
		}
		if n := utf8.RuneCountInString(text); n > maxConfirmText {
			t.Errorf("text is %d characters, Slack allows %d", n, maxConfirmText)
		}
		if strings.Contains(title+text, "\n") {
			t.Errorf("the dialog has line breaks: %q / %q", title, text)
		}
	}
}

// TestWhyLine checks what a pending card says about why it needs a
// person, for every rule, with and without the route's policy.
func TestWhyLine(t *testing.T) {
	c := pendingCard()
	c.ToolLabel = "fs.write_file"
	for _, tt := range []struct {
		rule, autoApprove, policyErr, want string
	}{
		{approval.RuleTool, "", "", "Why: `fs.write_file` always needs approval."},
		{approval.RuleArguments, "", "", "Why: `fs.write_file` asked for approval of these arguments."},
		{approval.RuleMCP, "", "", "Why: `fs.write_file` is an MCP tool its server does not list as read-only."},
		{approval.RuleClient, "", "", "Why: the API client `U0ALICE` asked for it."},
		{approval.RuleTool, "args.amount <= 100", "", "Why: `fs.write_file` always needs approval · the route's auto_approve `args.amount &lt;= 100` did not approve it."},
		{approval.RuleTool, "args.amount <= 100", "no such key: amount", "Why: `fs.write_file` always needs approval · the route's policy could not decide (`no such key: amount`), so a person must."},
		{"", "", "", ""},
	} {
		c.Rule, c.AutoApprove, c.PolicyError = tt.rule, tt.autoApprove, tt.policyErr
		if got := whyLine(c, 800); got != tt.want {
			t.Errorf("rule %q, auto_approve %q, error %q:\n got %q\nwant %q", tt.rule, tt.autoApprove, tt.policyErr, got, tt.want)
		}
	}
	// Only while pending.
	c.Rule, c.State = approval.RuleTool, approval.CallApproved
	c.DecidedBy = "U0BOB"
	if v := toJSON(t, slack.Blocks{BlockSet: ApprovalBlocks(c)}); strings.Contains(fmt.Sprint(v), "Why: ") {
		t.Error("a decided card still says why it needs approval")
	}
}

func TestGrantActionID(t *testing.T) {
	for _, d := range []time.Duration{30 * time.Minute, time.Hour, 8 * time.Hour, 72 * time.Hour} {
		id := GrantActionID(d)
		if got, ok := grantOf(id); !ok || got != d {
			t.Errorf("grantOf(%q) = %v, %v; want %v", id, got, ok, d)
		}
	}
	for _, id := range []string{"approve", "approve_for_", "approve_for_8h", "approve_for_-5m", "approve_for_0m", "approve_for_1e9m", "approve_for_99999999999m", "approve_for_60", "approve_for_+60m", "approve_for_060m", "approve_for_60m\n"} {
		if d, ok := grantOf(id); ok {
			t.Errorf("grantOf(%q) = %v, want not a grant", id, d)
		}
	}
}
