package mcpgateway

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

func TestAttachReceipt(t *testing.T) {
	md := map[string]any{"slackbot_receipt": "eyJhbGciOiJFZERTQSJ9.e30.c2ln", "other": 1}

	res := &mcp.CallToolResult{Meta: mcp.Meta{"upstream": "kept"}}
	attachReceipt(res, mcptools.ReceiptMeta(md))
	if res.Meta[ReceiptMetaKey] != "eyJhbGciOiJFZERTQSJ9.e30.c2ln" || res.Meta["upstream"] != "kept" || res.Meta["other"] != nil {
		t.Errorf("_meta = %v; want the receipt beside the upstream's, nothing else", res.Meta)
	}

	for name, md := range map[string]map[string]any{"no results": nil, "no receipt": {"other": 1}} {
		res := &mcp.CallToolResult{}
		attachReceipt(res, mcptools.ReceiptMeta(md))
		if res.Meta != nil {
			t.Errorf("%s: _meta = %v; want none", name, res.Meta)
		}
	}
}

func TestPromptResultIsExactJSON(t *testing.T) {
	got := resultText(promptResult(PromptDecision{Behavior: "allow", UpdatedInput: []byte(`{"command":"a < b && c"}`)}))
	if want := `{"behavior":"allow","updatedInput":{"command":"a < b && c"}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	got = resultText(promptResult(PromptDecision{Behavior: "deny", Message: "No."}))
	if want := `{"behavior":"deny","message":"No."}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
