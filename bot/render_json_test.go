package bot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// prettyJSON writes what json.Indent writes, with invisible characters
// revealed, and keeps exactly its first limit characters.
func TestPrettyJSONMatchesIndent(t *testing.T) {
	inputs := []string{
		`{}`, `[]`, `{"a":{}}`, `{"a":[]}`, `{"a":[[],{}],"b":null}`,
		` { "a" : 1 , "b" : [ 1 , 2 , { "c" : "d" } ] } `,
		`{"s":"quote \" backslash \\ brace { bracket [ comma , colon :"}`,
		`{"u":"é🙂\u0301ש <&> ` + "`*_" + `","z":"zero` + "\u200b" + `width","rtl":"` + "\u202e" + `x"}`,
		`{"n":-1.5e10,"t":true,"f":false}`,
		`[1,"two",{"three":[3]}]`,
		`"{\"wrapped\": [1, 2]}"`,
		string(bigArgs(5_000)),
		string(hostileArgs(t, 5_000)),
		`{"deep":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
	}
	for i, in := range inputs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			raw := json.RawMessage(in)
			src := bytes.TrimSpace(raw)
			if src[0] == '"' {
				var s string
				if err := json.Unmarshal(src, &s); err != nil {
					t.Fatal(err)
				}
				src = []byte(s)
			}
			var buf bytes.Buffer
			if err := json.Indent(&buf, src, "", "  "); err != nil {
				t.Fatal(err)
			}
			want := reveal(buf.String(), true)
			got := prettyJSON(raw, 1<<30)
			if got.prefix != want || got.total != utf8.RuneCountInString(want) {
				t.Fatalf("prettyJSON(%.60q) =\n%s\n(total %d), want\n%s\n(total %d)", in, got.prefix, got.total, want, utf8.RuneCountInString(want))
			}
			for _, limit := range []int{0, 1, 7, 100} {
				p := prettyJSON(raw, limit)
				if p.total != got.total || !strings.HasPrefix(want, p.prefix) || utf8.RuneCountInString(p.prefix) < min(limit, p.total) || utf8.RuneCountInString(p.prefix) > limit+6 {
					t.Errorf("limit %d: prefix %q (total %d), want about %d characters of the whole (total %d)", limit, p.prefix, p.total, limit, got.total)
				}
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(want)); err != nil {
				t.Fatal(err)
			}
			if c := compactPreview(raw, 1<<30); c.prefix != compact.String() {
				t.Errorf("compactPreview = %q, want %q", c.prefix, compact.String())
			}
		})
	}
	for _, in := range []string{``, `null`, ` null `} {
		if p := prettyJSON(json.RawMessage(in), 100); p.prefix != "{}" || p.total != 2 {
			t.Errorf("prettyJSON(%q) = %+v, want {}", in, p)
		}
	}
	if p := prettyJSON(json.RawMessage("not json \u202e\n{"), 100); p.prefix != `not json \u202e`+"\n{" {
		t.Errorf("prettyJSON of text = %q, want it as it is, revealed", p.prefix)
	}
}

// deepArgs is 20 KB of [[[[…]]]]: json.Indent writes ~200 MB for it.
func deepArgs(n int) json.RawMessage {
	return json.RawMessage(`{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Rendering costs memory linear in the input's size, however deep: a card,
// its final state and the View all arguments modal for 20 KB of nested
// brackets (refused at every door, but rendering does not rely on that).
func TestRenderingDeepArgsIsBounded(t *testing.T) {
	c := pendingCard()
	c.Args = deepArgs(10_000)
	c.Confirmation = ""
	const budget = 8 << 20
	if n := allocated(func() { _ = ApprovalBlocks(c) }); n > budget {
		t.Errorf("ApprovalBlocks allocated %d bytes for 20 KB of nesting, want < %d", n, budget)
	}
	c.State, c.OverrideArgs = approval.CallApproved, deepArgs(10_000)
	if n := allocated(func() { _ = ApprovalBlocks(c) }); n > budget {
		t.Errorf("ApprovalBlocks (approved) allocated %d bytes, want < %d", n, budget)
	}
	if n := allocated(func() { _ = ArgsModal(c) }); n > budget {
		t.Errorf("ArgsModal allocated %d bytes, want < %d", n, budget)
	}
	if n := allocated(func() { _ = EditArgsModal(c, approval.MessageRef{}, nil) }); n > budget {
		t.Errorf("EditArgsModal allocated %d bytes, want < %d", n, budget)
	}
}

// The default confirmation a card makes is agentrunner's, for arguments a
// card can show whole.
func TestDefaultConfirmationMatchesAgentrunner(t *testing.T) {
	for _, args := range []string{``, `null`, `{}`, `{"path": "temp.txt", "n": [1, 2]}`, `"{\"a\": 1}"`, string(bigArgs(1_000))} {
		want := agentrunner.DefaultConfirmation(agentrunner.ToolCallPart{ToolName: "delete_file", Args: json.RawMessage(args)})
		if got := defaultConfirmation("delete_file", json.RawMessage(args)); got != want {
			t.Errorf("defaultConfirmation(%.40q) = %.80q, want %.80q", args, got, want)
		}
	}
	long := defaultConfirmation("t", bigArgs(1<<20))
	if n := utf8.RuneCountInString(long); n > maxSectionText+10 || !strings.Contains(long, endsGap) || !strings.HasSuffix(long, "}]})?") {
		t.Errorf("confirmation for 1 MiB of arguments is %d characters ending %q, want it cut in its middle to a section", n, long[len(long)-10:])
	}
}

// worstArgs is about size bytes of argument JSON made to cost the most to
// render: nested 63 levels deep (the deepest every door accepts, with the
// top object), thousands of keys, long strings of multibyte, combining,
// invisible and escaped characters.
func worstArgs(size int) json.RawMessage {
	const depth = 62
	leaf := strings.Repeat("é🙂\u0301ש<&>`*_\u200b\u202e\\\"", 12)
	var b strings.Builder
	b.WriteString("{")
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"key%05d":`, i)
		for d := range depth {
			if d%2 == 0 {
				b.WriteString(`[`)
			} else {
				fmt.Fprintf(&b, `{"k%d":`, d)
			}
		}
		s, _ := json.Marshal(leaf)
		b.Write(s)
		for d := depth - 1; d >= 0; d-- {
			if d%2 == 0 {
				b.WriteString(`]`)
			} else {
				b.WriteString(`}`)
			}
		}
	}
	b.WriteString("}")
	return json.RawMessage(b.String())
}

// BenchmarkRenderWorstCaseArgs renders 1 MiB of worst-case arguments on a
// pending card, on an approved card with as many edited arguments, in the
// View all arguments modal and in the edit modal. indent_before is what
// the renderer did before it cut before indenting: json.Indent of the
// whole document and revealing the result, once per card or modal.
func BenchmarkRenderWorstCaseArgs(b *testing.B) {
	args := worstArgs(1 << 20)
	if err := agentrunner.CheckArgs(args); err != nil || !json.Valid(args) {
		b.Fatalf("worst-case arguments are refused at the door: %v", err)
	}
	pending := pendingCard()
	pending.Args, pending.Confirmation = args, ""
	approved := pending
	approved.State, approved.OverrideArgs = approval.CallApproved, args
	b.Run("pending_card", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = ApprovalBlocks(pending)
			_ = ApprovalText(pending)
		}
	})
	b.Run("approved_card", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = ApprovalBlocks(approved)
		}
	})
	b.Run("args_modal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = ArgsModal(pending)
		}
	})
	b.Run("edit_modal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = EditArgsModal(pending, approval.MessageRef{}, nil)
		}
	})
	b.Run("indent_before", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			_ = json.Indent(&buf, args, "", "  ")
			_ = reveal(buf.String(), true)
		}
	})
}
