package agentrunner_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
)

func TestNewToolSchema(t *testing.T) {
	tool := agentrunner.NewTool("issue_refund", "Refund an order.",
		func(context.Context, *agentrunner.ToolContext, refundArgs) (any, error) { return nil, nil })
	var got map[string]any
	if err := json.Unmarshal(tool.Schema(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"order_id", "amount"},
		"properties": map[string]any{
			"order_id": map[string]any{"type": "string"},
			"amount":   map[string]any{"type": "number", "minimum": float64(0)},
		},
	}
	if !jsonEqual(mustJSON(t, want), mustJSON(t, got)) {
		t.Errorf("schema: got %s, want %s", tool.Schema(), mustJSON(t, want))
	}
	def := tool.Definition()
	if def.Name != "issue_refund" || def.Description != "Refund an order." {
		t.Errorf("definition: got %+v", def)
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestValidateArgs(t *testing.T) {
	tool := agentrunner.NewTool("issue_refund", "Refund an order.",
		func(context.Context, *agentrunner.ToolContext, refundArgs) (any, error) { return nil, nil })
	tests := []struct {
		name, args string
		want       string   // normalized args; "" when invalid
		problems   []string // substrings of the problems
	}{
		{"valid", `{"order_id":"A1","amount":40}`, `{"order_id":"A1","amount":40}`, nil},
		{"string form", `"{\"order_id\":\"A1\",\"amount\":40}"`, `{"order_id":"A1","amount":40}`, nil},
		{"wrong type", `{"order_id":"A1","amount":"forty"}`, "", []string{"at /amount"}},
		{"missing and extra", `{"amount":-1,"note":"x"}`, "", []string{"order_id", "note", "at /amount"}},
		{"not an object", `[1]`, "", []string{"not a JSON object"}},
		{"null", `null`, "", []string{"order_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tool.ValidateArgs(json.RawMessage(tt.args))
			if tt.want != "" {
				if err != nil {
					t.Fatalf("got error %v, want none", err)
				}
				if !jsonEqual(got, json.RawMessage(tt.want)) {
					t.Errorf("got %s, want %s", got, tt.want)
				}
				return
			}
			var ae *agentrunner.ArgsError
			if !errors.As(err, &ae) {
				t.Fatalf("got error %v, want *ArgsError", err)
			}
			if ae.Tool != "issue_refund" {
				t.Errorf("ArgsError.Tool: got %s, want issue_refund", ae.Tool)
			}
			for _, p := range tt.problems {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q does not mention %q", err, p)
				}
			}
		})
	}
}

func TestNewRawTool(t *testing.T) {
	noop := func(context.Context, *agentrunner.ToolContext, json.RawMessage) (any, error) { return nil, nil }
	if _, err := agentrunner.NewRawTool("", "", json.RawMessage(`{}`), noop); err == nil {
		t.Error("empty name: got no error, want one")
	}
	if _, err := agentrunner.NewRawTool("t", "", json.RawMessage(`{"type":7}`), noop); err == nil {
		t.Error("bad schema: got no error, want one")
	}
	// A schema comes from an MCP server or an API client: it may not make
	// slackbot read a file (or a device that never ends).
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"type":"object"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file://" + secret, secret, "file:///dev/zero", "https://example.com/s.json"} {
		schema, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"p": map[string]any{"$ref": ref}}})
		if _, err := agentrunner.NewRawTool("t", "", schema, noop); err == nil || !strings.Contains(err.Error(), "may refer only to itself") {
			t.Errorf("$ref %s: got %v, want the refusal", ref, err)
		}
	}
	local := json.RawMessage(`{"type":"object","$defs":{"p":{"type":"string"}},"properties":{"p":{"$ref":"#/$defs/p"}}}`)
	if tool, err := agentrunner.NewRawTool("t", "", local, noop); err != nil {
		t.Errorf("a $ref inside the schema: %v", err)
	} else if _, err := tool.ValidateArgs(json.RawMessage(`{"p":1}`)); err == nil {
		t.Error(`a $ref inside the schema: {"p":1} passed, want refused`)
	}
	tool, err := agentrunner.NewRawTool("t", "", json.RawMessage(`{"type":"object"}`), noop, agentrunner.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if !tool.IsReadOnly() || tool.NeedsApproval() {
		t.Errorf("got read-only %v needs approval %v, want true false", tool.IsReadOnly(), tool.NeedsApproval())
	}
	if _, err := agentrunner.NewRunner(agentrunner.TestModel{}, []*agentrunner.Tool{tool, tool}); err == nil {
		t.Error("duplicate tool names: got no error, want one")
	}
	if _, err := agentrunner.NewRunner(nil, nil); err == nil {
		t.Error("no model: got no error, want one")
	}
}
