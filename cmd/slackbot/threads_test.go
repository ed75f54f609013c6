package main

import (
	"encoding/json"
	"testing"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/runs"
	"github.com/slackapprove/slackbot/store"
)

// A queued turn keeps its origin under the keys the previous version
// wrote, and a turn the previous version queued decodes whole.
func TestQueuedTurnEncoding(t *testing.T) {
	t.Parallel()
	turn := runs.Turn{RunID: "run-1", Prompt: "hi", MessageTS: "1.3", InThread: true,
		Origin: approval.Origin{Team: "T0", Channel: "C0", ThreadTS: "1.2", User: "U0CAROL"}}
	b, err := encodeTurn(turn)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Origin map[string]string `json:"origin"`
	}
	if err := json.Unmarshal(b, &raw); err != nil || raw.Origin["TeamID"] != "T0" || raw.Origin["ThreadTS"] != "1.2" {
		t.Errorf("queued turn %s: want the origin under TeamID and ThreadTS", b)
	}
	got, err := decodeTurn(&store.ThreadTurn{RunID: "run-1", Payload: b})
	if err != nil || *got != turn {
		t.Errorf("round trip: %+v, %v; want %+v", got, err, turn)
	}
	old := `{"run_id":"","prompt":"hi","origin":{"TeamID":"T0","Channel":"C0","ThreadTS":"1.2","User":"U0CAROL","Client":""},"message_ts":"1.3","in_thread":true}`
	got, err = decodeTurn(&store.ThreadTurn{RunID: "run-1", Payload: []byte(old)})
	if err != nil || *got != turn {
		t.Errorf("a turn the previous version queued: %+v, %v; want %+v", got, err, turn)
	}
}
