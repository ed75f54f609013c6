package bot

import (
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/approval"
)

// Explain names who decided without letting free text from an API client
// mention anyone or link anywhere.
func TestExplainEscapesWhoDecided(t *testing.T) {
	cases := []struct {
		by, want string
	}{
		{"U0ALICE", "<@U0ALICE>"},
		{"policy:refunds", "policy:refunds"},
		{"agent/<!here> <https://evil.example|Re-approve here>", "agent/&lt;!here&gt; &lt;https://evil.example|Re-approve here&gt;"},
		{"Webhook/bob", "Webhook/bob"},
	}
	for _, c := range cases {
		got := Explain(approval.ErrDecided, &approval.Call{Status: approval.CallApproved, DecidedBy: c.by}, nil)
		if !strings.Contains(got, "approved by "+c.want+".") {
			t.Errorf("decided by %q: got %q, want it to name %q", c.by, got, c.want)
		}
		if strings.Contains(got, "<!") || strings.Contains(got, "<http") {
			t.Errorf("decided by %q: %q can mention or link", c.by, got)
		}
	}
}
