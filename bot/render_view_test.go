package bot

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/approval"
)

// Every golden card shows approval's view of its call, in approval's
// words: the header is the view's state words, the ending line is
// approval.EndingLine in Slack's marks, and the buttons are the view's
// choices, in order, with their labels and action ids — nothing a card
// offers or says of a call is decided here.
func TestCardsRenderTheView(t *testing.T) {
	for name, c := range goldenCards() {
		t.Run(name, func(t *testing.T) {
			n := normalize(c)
			v := toJSON(t, slack.Blocks{BlockSet: ApprovalBlocks(c)})
			emoji, word, _ := approval.StateWords(n.Kind, n.State)
			header := texts(find(v, "header")[0])
			if len(header) != 1 || !strings.HasPrefix(header[0], emoji+" "+word+": ") {
				t.Errorf("header %q, want it to start with %q", header, emoji+" "+word+": ")
			}
			if n.State != approval.CallPending {
				sections := find(v, "section")
				if got, want := texts(sections[0]), []string{approval.EndingLine(n, cardMarks{})}; !cmp.Equal(got, want) {
					t.Errorf("ending line %q, want %q", got, want)
				}
			}
			actionID := map[approval.ChoiceKind]string{
				approval.ChooseApprove: ActionIDApprove, approval.ChooseDeny: ActionIDDeny,
				approval.ChooseDenyWithReason: ActionIDDenyReason, approval.ChooseEdit: ActionIDEdit, approval.ChooseAnswer: ActionIDAnswer,
				approval.ChooseApproveAll: ActionIDApproveAll, approval.ChooseDenyAll: ActionIDDenyAll,
			}
			var want, got []string
			for _, ch := range n.Choices() {
				id := actionID[ch.Kind]
				if ch.Kind == approval.ChooseApproveFor {
					id = GrantActionID(ch.Grant)
				}
				want = append(want, id+" "+approval.ChoiceLabel(ch))
			}
			for _, a := range find(v, "actions") {
				for _, e := range a["elements"].([]any) {
					b := e.(map[string]any)
					got = append(got, b["action_id"].(string)+" "+b["text"].(map[string]any)["text"].(string))
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("buttons (-choices +card):\n%s", diff)
			}
		})
	}
}
