package agentrunner_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner"
)

func mustArgs(s string) json.RawMessage { return json.RawMessage(s) }

// TestDeferredToolResultsWire decodes literal wire-format JSON, compares the
// Go value, and checks the canonical JSON written back.
func TestDeferredToolResultsWire(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *agentrunner.DeferredToolResults
		out  string // canonical form written back
	}{
		{
			name: "refund answer",
			in:   `{"calls":{},"approvals":{"call_1":true,"call_3":{"message":"Refunds over $100 need a manager.","kind":"tool-denied"}},"metadata":{},"answered_by":{}}`,
			want: &agentrunner.DeferredToolResults{
				Calls: map[string]agentrunner.CallResult{},
				Approvals: map[string]agentrunner.ApprovalResult{
					"call_1": agentrunner.Approve(),
					"call_3": agentrunner.Deny("Refunds over $100 need a manager."),
				},
				Metadata:   map[string]map[string]any{},
				AnsweredBy: map[string]string{},
			},
			out: `{"calls":{},"approvals":{"call_1":true,"call_3":{"message":"Refunds over $100 need a manager.","kind":"tool-denied"}},"metadata":{},"answered_by":{}}`,
		},
		{
			name: "every form",
			in: `{
				"approvals": {
					"a_true": true,
					"a_false": false,
					"a_denied": {"kind": "tool-denied", "message": "Not on a Friday."},
					"a_denied_default": {"kind": "tool-denied"},
					"a_override": {"kind": "tool-approved", "override_args": {"path": "b.txt"}},
					"a_override_string": {"kind": "tool-approved", "override_args": "{\"path\": \"c.txt\"}"},
					"a_approved_plain": {"kind": "tool-approved", "override_args": null}
				},
				"calls": {
					"c_string": "eu-west",
					"c_object": {"status": "done", "kind": "job"},
					"c_number": 42,
					"c_null": null,
					"c_failed": {"kind": "tool-failed", "message": "worker crashed"},
					"c_retry": {"kind": "model-retry", "message": "Ask for the order id."}
				},
				"metadata": {"a_override": {"ticket": "T-1"}},
				"answered_by": {"a_true": "U0ALICE", "a_denied": "policy:refunds"}
			}`,
			want: &agentrunner.DeferredToolResults{
				Approvals: map[string]agentrunner.ApprovalResult{
					"a_true":            agentrunner.Approve(),
					"a_false":           agentrunner.Deny(""),
					"a_denied":          agentrunner.Deny("Not on a Friday."),
					"a_denied_default":  agentrunner.Deny(agentrunner.DefaultDenialMessage),
					"a_override":        agentrunner.ApproveWith(mustArgs(`{"path": "b.txt"}`)),
					"a_override_string": agentrunner.ApproveWith(mustArgs(`{"path": "c.txt"}`)),
					"a_approved_plain":  agentrunner.Approve(),
				},
				Calls: map[string]agentrunner.CallResult{
					"c_string": {Value: mustArgs(`"eu-west"`)},
					"c_object": {Value: mustArgs(`{"status": "done", "kind": "job"}`)},
					"c_number": {Value: mustArgs(`42`)},
					"c_null":   {Value: mustArgs(`null`)},
					"c_failed": agentrunner.Fail("worker crashed"),
					"c_retry":  agentrunner.RetryWith("Ask for the order id."),
				},
				Metadata:   map[string]map[string]any{"a_override": {"ticket": "T-1"}},
				AnsweredBy: map[string]string{"a_true": "U0ALICE", "a_denied": "policy:refunds"},
			},
			out: `{"calls":{"c_failed":{"message":"worker crashed","kind":"tool-failed"},"c_null":null,"c_number":42,"c_object":{"status":"done","kind":"job"},"c_retry":{"message":"Ask for the order id.","kind":"model-retry"},"c_string":"eu-west"},` +
				`"approvals":{"a_approved_plain":true,"a_denied":{"message":"Not on a Friday.","kind":"tool-denied"},"a_denied_default":{"message":"The tool call was denied.","kind":"tool-denied"},"a_false":{"message":"The tool call was denied.","kind":"tool-denied"},"a_override":{"override_args":{"path":"b.txt"},"kind":"tool-approved"},"a_override_string":{"override_args":{"path":"c.txt"},"kind":"tool-approved"},"a_true":true},` +
				`"metadata":{"a_override":{"ticket":"T-1"}},"answered_by":{"a_denied":"policy:refunds","a_true":"U0ALICE"}}`,
		},
		{
			name: "every key optional",
			in:   `{}`,
			want: agentrunner.NewDeferredToolResults(),
			out:  `{"calls":{},"approvals":{},"metadata":{},"answered_by":{}}`,
		},
		{
			name: "pydantic ai without answered_by",
			in:   `{"calls":{"c":{"kind":"model-retry","message":"again"}},"approvals":{"a":false},"metadata":{}}`,
			want: &agentrunner.DeferredToolResults{
				Calls:      map[string]agentrunner.CallResult{"c": agentrunner.RetryWith("again")},
				Approvals:  map[string]agentrunner.ApprovalResult{"a": agentrunner.Deny("")},
				Metadata:   map[string]map[string]any{},
				AnsweredBy: map[string]string{},
			},
			out: `{"calls":{"c":{"message":"again","kind":"model-retry"}},"approvals":{"a":{"message":"The tool call was denied.","kind":"tool-denied"}},"metadata":{},"answered_by":{}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got agentrunner.DeferredToolResults
			if err := json.Unmarshal([]byte(tt.in), &got); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if diff := cmp.Diff(tt.want, &got, cmp.Comparer(jsonEqual)); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
			b, err := json.Marshal(&got)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if string(b) != tt.out {
				t.Errorf("marshal:\n got %s\nwant %s", b, tt.out)
			}
			// The canonical form decodes to the same answers.
			var again agentrunner.DeferredToolResults
			if err := json.Unmarshal(b, &again); err != nil {
				t.Fatalf("unmarshal canonical: %v", err)
			}
			if diff := cmp.Diff(&got, &again, cmp.Comparer(jsonEqual)); diff != "" {
				t.Errorf("round trip (-first +second):\n%s", diff)
			}
		})
	}
}

// jsonEqual compares raw JSON by meaning, not by spacing.
func jsonEqual(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return cmp.Equal(x, y)
}

func TestDeferredToolResultsWireErrors(t *testing.T) {
	for _, in := range []string{
		`{"approvals":{"a":"yes"}}`,
		`{"approvals":{"a":{"kind":"tool-maybe"}}}`,
		`{"approvals":{"a":{"kind":"tool-approved","override_args":[1]}}}`,
		`{"approvals":{"a":{"kind":"tool-approved","override_args":"not json"}}}`,
		`{"calls":{"c":{"kind":"tool-failed","message":7}}}`,
		`{"approvals":[]}`,
	} {
		var got agentrunner.DeferredToolResults
		if err := json.Unmarshal([]byte(in), &got); err == nil {
			t.Errorf("unmarshal %s: got no error, want one", in)
		}
	}
}

func TestDeferredToolRequestsWire(t *testing.T) {
	in := `{
		"calls": [
			{"tool_name": "run_job", "args": {"job": "reindex"}, "tool_call_id": "c1", "id": null, "part_kind": "tool-call", "provider_details": {"x": 1}},
			{"tool_name": "ask_user", "args": "{\"topic\": \"region\"}", "tool_call_id": "c2"}
		],
		"approvals": [{"tool_name": "delete_file", "args": null, "tool_call_id": "a1", "part_kind": "tool-call"}],
		"metadata": {"c2": {"question": "Which region?"}, "a1": {"reason": "protected"}}
	}`
	var got agentrunner.DeferredToolRequests
	if err := json.Unmarshal([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	want := agentrunner.DeferredToolRequests{
		Calls: []agentrunner.ToolCallPart{
			{ToolName: "run_job", Args: mustArgs(`{"job": "reindex"}`), ToolCallID: "c1"},
			{ToolName: "ask_user", Args: mustArgs(`"{\"topic\": \"region\"}"`), ToolCallID: "c2"},
		},
		Approvals: []agentrunner.ToolCallPart{{ToolName: "delete_file", Args: mustArgs(`null`), ToolCallID: "a1"}},
		Metadata:  map[string]map[string]any{"c2": {"question": "Which region?"}, "a1": {"reason": "protected"}},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(jsonEqual)); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	for id, kind := range map[string]agentrunner.CallKind{"a1": agentrunner.KindApproval, "c1": agentrunner.KindExternal, "c2": agentrunner.KindQuestion, "zz": ""} {
		if got := got.Kind(id); got != kind {
			t.Errorf("Kind(%s): got %q, want %q", id, got, kind)
		}
	}
	if diff := cmp.Diff([]string{"a1", "c1", "c2"}, got.IDs()); diff != "" {
		t.Errorf("IDs (-want +got):\n%s", diff)
	}

	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	wantOut := `{"calls":[{"tool_name":"run_job","args":{"job":"reindex"},"tool_call_id":"c1"},{"tool_name":"ask_user","args":"{\"topic\": \"region\"}","tool_call_id":"c2"}],` +
		`"approvals":[{"tool_name":"delete_file","args":null,"tool_call_id":"a1"}],"metadata":{"a1":{"reason":"protected"},"c2":{"question":"Which region?"}}}`
	if string(b) != wantOut {
		t.Errorf("marshal:\n got %s\nwant %s", b, wantOut)
	}
	empty, _ := json.Marshal(agentrunner.DeferredToolRequests{})
	if got, want := string(empty), `{"calls":[],"approvals":[],"metadata":{}}`; got != want {
		t.Errorf("empty requests: got %s, want %s", got, want)
	}
}

func TestToolCallPartArgs(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"object", `{"tool_name":"f","args":{"path":"temp.txt"},"tool_call_id":"1"}`, `{"path":"temp.txt"}`, false},
		{"json string", `{"tool_name":"f","args":"{\"path\":\"temp.txt\"}","tool_call_id":"1"}`, `{"path":"temp.txt"}`, false},
		{"empty string", `{"tool_name":"f","args":"","tool_call_id":"1"}`, `{}`, false},
		{"null", `{"tool_name":"f","args":null,"tool_call_id":"1"}`, `{}`, false},
		{"absent", `{"tool_name":"f","tool_call_id":"1"}`, `{}`, false},
		{"extra fields", `{"tool_name":"f","args":{"path":"temp.txt"},"tool_call_id":"1","id":"fc_9","part_kind":"tool-call","provider_details":{"cache":true}}`, `{"path":"temp.txt"}`, false},
		{"array", `{"tool_name":"f","args":[1],"tool_call_id":"1"}`, ``, true},
		{"string not object", `{"tool_name":"f","args":"[1]","tool_call_id":"1"}`, ``, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p agentrunner.ToolCallPart
			if err := json.Unmarshal([]byte(tt.in), &p); err != nil {
				t.Fatalf("unmarshal: %v", err)
			}
			if p.ToolName != "f" || p.ToolCallID != "1" {
				t.Errorf("got tool %q id %q, want f and 1", p.ToolName, p.ToolCallID)
			}
			got, err := p.ArgsObject()
			if (err != nil) != tt.wantErr {
				t.Fatalf("ArgsObject: got error %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && !jsonEqual(got, mustArgs(tt.want)) {
				t.Errorf("ArgsObject: got %s, want %s", got, tt.want)
			}
		})
	}
}

func pendingRequests() agentrunner.DeferredToolRequests {
	return agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{
			{ToolName: "issue_refund", Args: mustArgs(`{"amount":40}`), ToolCallID: "call_1"},
			{ToolName: "issue_refund", Args: mustArgs(`{"amount":400}`), ToolCallID: "call_3"},
		},
		Calls: []agentrunner.ToolCallPart{
			{ToolName: "ask_user", Args: mustArgs(`{}`), ToolCallID: "call_2"},
			{ToolName: "run_job", Args: mustArgs(`{}`), ToolCallID: "call_4"},
		},
		Metadata: map[string]map[string]any{"call_2": {"question": "Which region?"}},
	}
}

func TestBuildResults(t *testing.T) {
	req := pendingRequests()
	tests := []struct {
		name       string
		approvals  map[string]agentrunner.ApprovalResult
		calls      map[string]agentrunner.CallResult
		approveAll bool
		wantErr    string // substring naming the refused ids; "" for none
		wantLeft   []string
	}{
		{
			name:      "partial",
			approvals: map[string]agentrunner.ApprovalResult{"call_1": agentrunner.Approve()},
			calls:     map[string]agentrunner.CallResult{"call_2": {Value: mustArgs(`"eu"`)}},
			wantLeft:  []string{"call_3", "call_4"},
		},
		{
			name:       "approve all",
			approveAll: true,
			calls:      map[string]agentrunner.CallResult{"call_2": {Value: mustArgs(`"eu"`)}, "call_4": agentrunner.Fail("x")},
			wantLeft:   []string{},
		},
		{
			name:      "unknown ids",
			approvals: map[string]agentrunner.ApprovalResult{"call_9": agentrunner.Approve(), "call_1": agentrunner.Approve()},
			calls:     map[string]agentrunner.CallResult{"call_8": agentrunner.Fail("x")},
			wantErr:   "approval call_9, call call_8",
		},
		{
			name:      "wrong kind",
			approvals: map[string]agentrunner.ApprovalResult{"call_2": agentrunner.Approve()},
			calls:     map[string]agentrunner.CallResult{"call_1": agentrunner.Fail("x")},
			wantErr:   "approval call_2, call call_1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := req.BuildResults(tt.approvals, tt.calls, tt.approveAll)
			if tt.wantErr != "" {
				if !errors.Is(err, agentrunner.ErrNotPending) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want ErrNotPending naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			left := req.Remaining(res)
			if diff := cmp.Diff(tt.wantLeft, left.IDs()); diff != "" {
				t.Errorf("remaining (-want +got):\n%s", diff)
			}
			for _, id := range left.IDs() {
				if _, ok := left.Call(id); !ok {
					t.Errorf("remaining: Call(%s) not found", id)
				}
			}
		})
	}
}

func TestRemainingKeepsMetadata(t *testing.T) {
	req := pendingRequests()
	res := agentrunner.NewDeferredToolResults()
	res.Approvals["call_1"] = agentrunner.Approve()
	left := req.Remaining(res)
	if got := left.Kind("call_2"); got != agentrunner.KindQuestion {
		t.Errorf("Kind(call_2) after Remaining: got %q, want question", got)
	}
	if got := left.Kind("call_1"); got != "" {
		t.Errorf("Kind(call_1) after Remaining: got %q, want not pending", got)
	}
	if err := req.Check(nil); err != nil {
		t.Errorf("Check(nil): got %v, want nil", err)
	}
}

func TestMerge(t *testing.T) {
	a := agentrunner.NewDeferredToolResults()
	a.Approvals["x"] = agentrunner.Approve()
	a.AnsweredBy["x"] = "U1"
	b := &agentrunner.DeferredToolResults{Approvals: map[string]agentrunner.ApprovalResult{"x": agentrunner.Deny("no")}, AnsweredBy: map[string]string{"x": "U2"}}
	a.Merge(b)
	a.Merge(nil)
	if got := a.Approvals["x"]; got.Approved || a.AnsweredBy["x"] != "U2" {
		t.Errorf("after merge: got %+v by %s, want the later denial by U2", got, a.AnsweredBy["x"])
	}
	if got := a.Len(); got != 1 {
		t.Errorf("Len: got %d, want 1", got)
	}
}

func TestDefaultConfirmation(t *testing.T) {
	tests := []struct {
		args json.RawMessage
		want string
	}{
		{mustArgs(`{"path": "temp.txt"}`), `Run delete_file({"path":"temp.txt"})?`},
		{mustArgs(`"{\"path\": \"temp.txt\"}"`), `Run delete_file({"path":"temp.txt"})?`},
		{nil, `Run delete_file({})?`},
	}
	for _, tt := range tests {
		got := agentrunner.DefaultConfirmation(agentrunner.ToolCallPart{ToolName: "delete_file", Args: tt.args, ToolCallID: "1"})
		if got != tt.want {
			t.Errorf("DefaultConfirmation(%s): got %s, want %s", tt.args, got, tt.want)
		}
	}
}

func TestPendingToolCallJSON(t *testing.T) {
	r, err := agentrunner.NewRunner(agentrunner.TestModel{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := r.PendingCalls(pendingRequests())
	b, err := json.Marshal(calls[2])
	if err != nil {
		t.Fatal(err)
	}
	want := `{"call":{"tool_name":"ask_user","args":{},"tool_call_id":"call_2"},"kind":"question","message":"Which region?","metadata":{"question":"Which region?"}}`
	if string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	if got, want := calls[0].Message, `Run issue_refund({"amount":40})?`; got != want {
		t.Errorf("approval message: got %s, want %s", got, want)
	}
}
