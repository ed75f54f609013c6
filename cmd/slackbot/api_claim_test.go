package main

import (
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/internal/apitest"
)

// TestAPICardNamesTheKey: through /v1, a card names who is authenticated.
// A client of the key billing that says "requester": "carol" gets a card
// whose requester line and "Why" line name the key; carol shows only as
// what the key says.
func TestAPICardNamesTheKey(t *testing.T) {
	t.Parallel()
	x := apiE2E{env: newAPIEnv(t), doc: apitest.Load(t)}
	a := x.create(t, deletion("call_1", "/tmp/report.csv", `,"requester":"carol"`))
	text := string(x.apiCard(a.Token, "call_1").BlocksJSON)
	for _, want := range []string{"Requested for `carol`, says `billing` (API)", "Why: the API client `billing` asked for it."} {
		if !strings.Contains(text, want) {
			t.Errorf("the card does not say %q: %s", want, text)
		}
	}
	for _, bad := range []string{"Requested by `carol`", "the API client `carol`"} {
		if strings.Contains(text, bad) {
			t.Errorf("the card names the client's claim as who asked (%q): %s", bad, text)
		}
	}
}
