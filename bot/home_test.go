package bot

import (
	"testing"
)

// Only a click whose payload says it came from a Home tab (container a
// view, the view of type home) counts as a Home click, the one kind of
// click the Service lets decide without a card; a button on a modal or a
// message does not.
func TestHomeClickOnlyFromTheHomeView(t *testing.T) {
	for _, tc := range []struct {
		name, payload string
		want          bool
	}{
		{"home", `{"type":"block_actions","user":{"id":"U0ALICE"},"container":{"type":"view","view_id":"V1"},"view":{"id":"V1","type":"home"},"actions":[{"type":"button","block_id":"b","action_id":"approve","value":"x"}]}`, true},
		{"modal", `{"type":"block_actions","user":{"id":"U0ALICE"},"container":{"type":"view","view_id":"V1"},"view":{"id":"V1","type":"modal"},"actions":[{"type":"button","block_id":"b","action_id":"approve","value":"x"}]}`, false},
		{"message claiming a home view", `{"type":"block_actions","user":{"id":"U0ALICE"},"container":{"type":"message","channel_id":"C1","message_ts":"1.2"},"view":{"id":"V1","type":"home"},"actions":[{"type":"button","block_id":"b","action_id":"approve","value":"x"}]}`, false},
		{"message", `{"type":"block_actions","user":{"id":"U0ALICE"},"container":{"type":"message","channel_id":"C1","message_ts":"1.2"},"actions":[{"type":"button","block_id":"b","action_id":"approve","value":"x"}]}`, false},
	} {
		cb, err := parseClick(tc.payload)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := homeClick(cb); got != tc.want {
			t.Errorf("%s: homeClick = %v, want %v", tc.name, got, tc.want)
		}
	}
}
