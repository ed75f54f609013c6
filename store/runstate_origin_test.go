package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
)

// A saved run keeps its origin under the keys the previous version wrote,
// and either version's encoding reads back.
func TestSaveWaitingRunKeepsOriginEncoding(t *testing.T) {
	e := newEnv(t)
	s := e.store()
	o := approval.Origin{Team: "T0", Channel: "C0SUPPORT", ThreadTS: "1700000000.000100", User: "U0CAROL"}
	rc := &agentrunner.RunContext{RunID: "run-origin"}
	if err := s.SaveWaitingRun(t.Context(), rc, agentrunner.NewToken(), requests("c1"), o, e.clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	rs, err := e.otherProcess(t).LoadRun(t.Context(), "run-origin")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]string
	if err := json.Unmarshal(rs.Origin, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["TeamID"] != "T0" || raw["ThreadTS"] != "1700000000.000100" || raw["User"] != "U0CAROL" || raw["Channel"] != "C0SUPPORT" {
		t.Errorf("saved origin %s, want the previous version's keys", rs.Origin)
	}
	got, err := rs.RunOrigin()
	if err != nil || got != o {
		t.Errorf("RunOrigin() = %+v, %v; want %+v", got, err, o)
	}
	old := json.RawMessage(`{"TeamID":"T1","Channel":"C1","ThreadTS":"1.2","User":"","Client":"billing"}`)
	if got, err := store.UnmarshalOrigin(old); err != nil || got != (approval.Origin{Team: "T1", Channel: "C1", ThreadTS: "1.2", Client: "billing"}) {
		t.Errorf("an origin the previous version saved: %+v, %v", got, err)
	}
}
