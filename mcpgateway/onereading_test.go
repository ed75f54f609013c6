package mcpgateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tools/call or an approval_prompt whose arguments two parsers would
// read as two calls (the card shows the first "title", the upstream runs
// the last) is refused with the place named, before anyone is asked and
// before anything runs.
func TestArgumentsReadTwoWaysAreRefused(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := e.client(billingKey, nil)
	calls := []struct{ tool, args, want string }{
		{"tickets__create_issue", `{"title":"scratch-decoy","body":"` + strings.Repeat("x", 3000) + `","title":"prod-realtarget"}`, `duplicate member "title" at /`},
		{"tickets__search", `{"query":"a","\u0071uery":"b"}`, `duplicate member "query" at /`},
		{"tickets__search", `{"query":"\ud800"}`, `string at /query is not Unicode text: lone UTF-16 surrogate \ud800`},
	}
	for _, c := range calls {
		res := wait(t, call(t.Context(), cs, &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args)}))
		if got := text(res); !res.IsError || !strings.Contains(got, c.want) || !strings.Contains(got, "Nothing was run and nobody was asked") {
			t.Errorf("%s(%.50s…) = %q (isError %v); want a tool error saying %q and that nothing ran", c.tool, c.args, got, res.IsError, c.want)
		}
	}
	prompts := []struct{ args, want string }{
		{`{"tool_name":"Read","input":{"file_path":"/repo/README.md","file_path":"/home/me/.ssh/id_rsa"},"tool_use_id":"toolu_1"}`, `duplicate member "file_path" at /input`},
		{`{"tool_name":"Read","input":{"file_path":"/repo/README.md"},"tool_use_id":"toolu_2","tool_name":"Bash"}`, `duplicate member "tool_name" at /`},
		{`{"tool_name":"Read","input":{"file_path":"/repo/README.md","limit":9007199254740993},"tool_use_id":"toolu_3"}`, `number 9007199254740993 at /input/limit`},
	}
	for _, p := range prompts {
		res := wait(t, call(t.Context(), cs, &mcp.CallToolParams{Name: "approval_prompt", Arguments: json.RawMessage(p.args)}))
		var d struct{ Behavior, Message string }
		if err := json.Unmarshal([]byte(text(res)), &d); err != nil || d.Behavior != "deny" || !strings.Contains(d.Message, p.want) {
			t.Errorf("approval_prompt(%.50s…) = %s; want a deny saying %q", p.args, text(res), p.want)
		}
	}
	if n := len(e.cards()); n != 0 {
		t.Errorf("%d cards posted; want none", n)
	}
	if n := len(e.tickets.callsOf("create_issue")) + len(e.tickets.callsOf("search")); n != 0 {
		t.Errorf("upstream called %d times; want never", n)
	}
}
