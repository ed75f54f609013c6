package approval_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// schemaRequest is a request of U9's for one call of a tool slackbot does
// not know, with md as its metadata.
func schemaRequest(tool string, md map[string]any) *approval.Request {
	call := agentrunner.ToolCallPart{ToolName: tool, Args: json.RawMessage(`{"amount":500}`), ToolCallID: "c1"}
	r := editRequest(call)
	if md != nil {
		r.Requests.Metadata = map[string]map[string]any{"c1": md}
	}
	return r
}

func refundSchema() map[string]any {
	return map[string]any{
		"type":                 "object",
		"properties":           map[string]any{"amount": map[string]any{"type": "integer", "minimum": 1}},
		"required":             []any{"amount"},
		"additionalProperties": false,
	}
}

// An API client's call of a tool slackbot does not know is checked, when
// edited, against the JSON Schema the client sent for it, and then against
// the route's auto_deny as every edit is.
func TestCheckEditWithClientSchema(t *testing.T) {
	svc := newEditService(t)
	tests := []struct {
		name, args string
		want       string // the reason contains this; "" means accepted
	}{
		{"fits the schema", `{"amount":600}`, ""},
		{"not the schema's type", `{"amount":"lots"}`, "/amount"},
		{"below the schema's minimum", `{"amount":0}`, "/amount"},
		{"a field the schema does not allow", `{"amount":5,"to":"me"}`, "to"},
		{"missing a required field", `{}`, "amount"},
		{"fits the schema, yet auto_deny", `{"amount":50000}`, "auto_deny"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := schemaRequest("refund_elsewhere", map[string]any{approval.ArgsSchemaKey: refundSchema(), "ticket": "T-1"})
			_, err := svc.CheckEdit(t.Context(), r, &approval.Call{ID: "c1", Route: "refunds"}, json.RawMessage(tt.args))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want accepted", err)
				}
				return
			}
			if !refusedEdit(err) || !strings.Contains(approval.ErrorMessage(err), tt.want) {
				t.Errorf("got %v, want refused with a reason containing %q", err, tt.want)
			}
		})
	}
	// Without a schema, the same edit of an unknown tool is only checked as
	// an object and by the policy.
	if _, err := svc.CheckEdit(t.Context(), schemaRequest("refund_elsewhere", nil), &approval.Call{ID: "c1", Route: "refunds"},
		json.RawMessage(`{"amount":0,"to":"me"}`)); err != nil {
		t.Errorf("no schema: got %v, want accepted", err)
	}
	// A tool slackbot knows keeps its own schema: a client's looser one
	// does not let an edit through.
	loose := schemaRequest("issue_refund", map[string]any{approval.ArgsSchemaKey: map[string]any{"type": "object"}})
	if _, err := svc.CheckEdit(t.Context(), loose, &approval.Call{ID: "c1", Route: "refunds"}, json.RawMessage(`{"amount":"lots"}`)); !refusedEdit(err) {
		t.Errorf("a known tool with a client's looser schema: got %v, want refused by the tool's own", err)
	}
}

// A schema a client sends is an object that compiles and refers only to
// itself, within bounds; anything else is refused with the reason.
func TestCheckArgsSchema(t *testing.T) {
	deep := map[string]any{"type": "object"}
	for range agentrunner.MaxArgsDepth {
		deep = map[string]any{"not": deep}
	}
	tests := []struct {
		name string
		md   map[string]any
		want string // the reason contains this; "" means accepted
	}{
		{"no metadata", nil, ""},
		{"no schema", map[string]any{"ticket": "T-1"}, ""},
		{"a schema", map[string]any{approval.ArgsSchemaKey: refundSchema()}, ""},
		{"not an object", map[string]any{approval.ArgsSchemaKey: "object"}, "must be a JSON Schema object"},
		{"does not compile", map[string]any{approval.ArgsSchemaKey: map[string]any{"type": 7}}, "not a JSON Schema slackbot can use"},
		{"refers to a file", map[string]any{approval.ArgsSchemaKey: map[string]any{"$ref": "file:///etc/passwd"}}, "may refer only to itself"},
		{"too long", map[string]any{approval.ArgsSchemaKey: map[string]any{"description": strings.Repeat("x", 70<<10)}}, "longer than"},
		{"too deep", map[string]any{approval.ArgsSchemaKey: deep}, "nested deeper than 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := approval.CheckArgsSchema("refund_elsewhere", tt.md)
			if tt.want == "" {
				if err != nil {
					t.Errorf("got %v, want accepted", err)
				}
				return
			}
			if approval.ErrorCode(err) != approval.EINVALID || !strings.Contains(approval.ErrorMessage(err), tt.want) {
				t.Errorf("got %v, want EINVALID containing %q", err, tt.want)
			}
		})
	}
}

// Editable: a tool slackbot knows, or a call whose request carries its
// schema; nothing else.
func TestEditable(t *testing.T) {
	tools, err := agentrunner.NewToolbox(nil)
	if err != nil {
		t.Fatal(err)
	}
	known := newEditTools(t)
	tests := []struct {
		name  string
		tools approval.Tools
		r     *approval.Request
		id    string
		want  bool
	}{
		{"a known tool", known, schemaRequest("issue_refund", nil), "c1", true},
		{"an unknown tool with its schema", known, schemaRequest("refund_elsewhere", map[string]any{approval.ArgsSchemaKey: refundSchema()}), "c1", true},
		{"an unknown tool with its schema, no tools at all", nil, schemaRequest("refund_elsewhere", map[string]any{approval.ArgsSchemaKey: refundSchema()}), "c1", true},
		{"an unknown tool without a schema", known, schemaRequest("refund_elsewhere", map[string]any{"ticket": "T-1"}), "c1", false},
		{"an empty toolbox, no schema", tools, schemaRequest("issue_refund", nil), "c1", false},
		{"not a call of the request", known, schemaRequest("issue_refund", nil), "c9", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := approval.Editable(tt.tools, tt.r, tt.id); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
