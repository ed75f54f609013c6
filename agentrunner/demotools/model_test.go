package demotools_test

import (
	"path/filepath"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/demotools"
)

func TestDemoModelUnderstandsDemoPrompts(t *testing.T) {
	d, err := demotools.New(filepath.Join(t.TempDir(), "sandbox"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := agentrunner.NewRunner(demotools.Model{}, d.Tools())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		prompt      string
		wantPending []string // tools waiting for approval
		wantOutput  string   // when the run completes at once
	}{
		{"please delete customer C-42", []string{"delete_customer"}, ""},
		{"refund order A-1002 150", []string{"issue_refund"}, ""},
		{"refund order A-1001 $20", nil, "Done: refunded $20.00 on order A-1001"},
		{"delete the file temp.txt", []string{"delete_file"}, ""},
		{"look up order A-1001 and delete customer C-77", []string{"delete_customer"}, ""},
		{"what can you do?", nil, demotools.Help},
	}
	for _, c := range cases {
		t.Run(c.prompt, func(t *testing.T) {
			res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: c.prompt, AllowPending: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(c.wantPending) == 0 {
				if res.Status != agentrunner.StatusComplete || res.Output != c.wantOutput {
					t.Fatalf("got %s %q, want complete %q", res.Status, res.Output, c.wantOutput)
				}
				return
			}
			if res.Status != agentrunner.StatusPending {
				t.Fatalf("got %s %q, want pending", res.Status, res.Output)
			}
			var got []string
			for _, c := range res.Pending.Approvals {
				got = append(got, c.ToolName)
			}
			if len(got) != len(c.wantPending) || got[0] != c.wantPending[0] {
				t.Errorf("pending %v, want %v", got, c.wantPending)
			}
		})
	}
}
