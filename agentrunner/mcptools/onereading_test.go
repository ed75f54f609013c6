package mcptools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

// Arguments that repeat a member never reach an MCP server, whether a
// model calls a read-only tool (which runs with no approval) or a gateway
// checks a client's call (OfferedTool.ValidateArgs): the server would
// read the last value, a person the first.
func TestDuplicateNamesNeverReachTheServer(t *testing.T) {
	srv, ts, tool := searchAnything(t)
	if tool.NeedsApproval() {
		t.Fatal("search_anything needs approval; want a tool that runs at once")
	}
	if told := retryPrompt(t, tool, `{"filter":{"owner":"me","owner":"everyone"}}`); !strings.Contains(told, `duplicate member "owner" at /filter`) {
		t.Errorf("retry prompt = %q; want the model told which member is repeated", told)
	}
	if calls := srv.Calls(); len(calls) != 0 {
		t.Errorf("server calls = %v, want none", calls)
	}

	var offered *mcptools.OfferedTool
	for _, o := range ts.Offered() {
		if o.Tool.Name == "tickets__close_ticket" {
			offered = o
		}
	}
	if _, err := offered.ValidateArgs(json.RawMessage(`{"id":1,"\u0069d":2}`)); err == nil || !strings.Contains(err.Error(), `duplicate member "id" at /`) {
		t.Errorf("ValidateArgs = %v; want refused naming the duplicate member", err)
	}
}
