package demotools_test

import (
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/demotools"
)

func TestDemoModelUnderstandsDemoPrompts(t *testing.T) {
	_, r := newDemoWith(t, demotools.Model{})
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

// TestDemoModelFollowsUp: in a conversation that refunded an order,
// "actually make it 100" refunds the same order $100, and "what did you
// just do?" recaps; with no earlier refund the follow-up gets the help.
func TestDemoModelFollowsUp(t *testing.T) {
	d, r := newDemoWith(t, demotools.Model{})
	first, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "refund order A-1002 150", AllowPending: true})
	if err != nil || first.Status != agentrunner.StatusPending {
		t.Fatalf("first turn: %v %+v", err, first)
	}
	approve := agentrunner.NewDeferredToolResults()
	approve.Approvals[first.Pending.Approvals[0].ToolCallID] = agentrunner.Approve()
	done, err := r.Run(t.Context(), agentrunner.RunInput{History: first.Messages, Pending: first.Pending, Results: approve})
	if err != nil || done.Output != "Done: refunded $150.00 on order A-1002" {
		t.Fatalf("approved: %v %+v", err, done)
	}

	fromSlack := []agentrunner.Message{
		{Kind: agentrunner.KindRequest, Parts: []agentrunner.Part{agentrunner.UserPrompt("<@U0CAROL> wrote: refund order A-1001 30")}},
		{Kind: agentrunner.KindResponse, Parts: []agentrunner.Part{agentrunner.Text("Done: refunded $30.00 on order A-1001")}},
	}
	cases := []struct {
		name    string
		history []agentrunner.Message
		prompt  string
		want    string
	}{
		{"new amount", done.Messages, "actually make it 100 and tell the customer", "Done: refunded $100.00 on order A-1002"},
		{"new amount, thread read from Slack", fromSlack, "make it 5 instead", "Done: refunded $5.00 on order A-1001"},
		{"recap", done.Messages, "what did you just do?", "So far in this conversation:\nDone: refunded $150.00 on order A-1002"},
		{"recap of nothing", fromSlack[:1], "what did you just do?", "I have not run any tool in this conversation yet."},
		{"no earlier refund", nil, "actually make it 100", demotools.Help},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := r.Run(t.Context(), agentrunner.RunInput{History: c.history, Prompt: c.prompt})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != agentrunner.StatusComplete || res.Output != c.want {
				t.Errorf("got %s %q, want %q", res.Status, res.Output, c.want)
			}
		})
	}
	if got := d.Refunds(); len(got) != 3 || got[1] != (demotools.Refund{OrderID: "A-1002", Amount: 100}) {
		t.Errorf("refunds: got %+v, want A-1002 $150, then A-1002 $100, then A-1001 $5", got)
	}
}
