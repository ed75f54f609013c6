package agentrunner_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
)

// TestParseAlwaysAllow: Claude Code's addRules/allow update is read and
// named in its own words; anything else is refused.
func TestParseAlwaysAllow(t *testing.T) {
	a, err := agentrunner.ParseAlwaysAllow(json.RawMessage(`{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test *"},{"toolName":"Read"}],"behavior":"allow","destination":"localSettings"}`))
	if err != nil || a.Rule() != "Bash(npm test *), Read" || !strings.Contains(a.Where(), "settings.local.json") {
		t.Fatalf("got %+v, %v; want Bash(npm test *), Read in the local settings", a, err)
	}
	b, _ := agentrunner.AlwaysAllowFrom(map[string]any{"type": "addRules", "behavior": "allow", "destination": "localSettings",
		"rules": []any{map[string]any{"toolName": "Bash", "ruleContent": "npm test *"}, map[string]any{"toolName": "Read"}}})
	if !a.Equal(b) {
		t.Errorf("the same update decoded from metadata: %+v, want equal to %+v", b, a)
	}
	for _, raw := range []string{
		``, `[]`, `"Bash(*)"`,
		`{"type":"setMode","mode":"acceptEdits","destination":"session"}`,
		`{"type":"addRules","rules":[{"toolName":"Bash"}],"behavior":"ask","destination":"session"}`,
		`{"type":"addRules","rules":[{"toolName":"Bash"}],"behavior":"allow","destination":"policySettings"}`,
		`{"type":"addRules","rules":[],"behavior":"allow","destination":"session"}`,
		`{"type":"addRules","rules":[{"toolName":""}],"behavior":"allow","destination":"session"}`,
		`{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"a\u202eb"}],"behavior":"allow","destination":"session"}`,
		`{"type":"addRules","rules":[{"toolName":"Bash"}],"behavior":"allow","destination":"session","x":1}`,
		`{"type":"addRules","rules":[{"toolName":"Bash"}],"behavior":"deny","behavior":"allow","destination":"session"}`,
		`{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"` + strings.Repeat("x", 2048) + `"}],"behavior":"allow","destination":"session"}`,
	} {
		if _, err := agentrunner.ParseAlwaysAllow(json.RawMessage(raw)); !errors.Is(err, agentrunner.ErrNotAlwaysAllow) {
			t.Errorf("%.70s: %v, want ErrNotAlwaysAllow", raw, err)
		}
	}
}
