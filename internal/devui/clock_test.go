package devui_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/internal/devui"
	"github.com/slackapprove/slackbot/internal/slackfake"
)

// POST /clock moves the Config's clock forward by a bounded duration and
// says where it stands; anything else is refused and moves nothing.
func TestClockForward(t *testing.T) {
	clock := &devui.Clock{}
	h := devui.New(devui.Config{Slack: slackfake.New(slackfake.WithDemoWorkspace()), SigningSecret: secret, Clock: clock})
	srv := httptest.NewServer(http.StripPrefix("/dev", h))
	t.Cleanup(srv.Close)
	e := &env{url: srv.URL + "/dev/"}

	before := time.Now()
	code, res := e.call(t, "clock", map[string]string{"advance": "10m"})
	if code != http.StatusOK || res["ok"] != true || res["minutes"] != float64(10) {
		t.Fatalf("advance 10m: %d %v", code, res)
	}
	if got := clock.Now().Sub(before); got < 10*time.Minute || got > 11*time.Minute {
		t.Errorf("the clock is %v ahead, want 10 minutes", got)
	}
	for _, bad := range []string{"", "-5m", "0s", "forever", "200h"} {
		if code, res := e.call(t, "clock", map[string]string{"advance": bad}); code != http.StatusBadRequest || res["ok"] != false {
			t.Errorf("advance %q: %d %v, want 400", bad, code, res)
		}
	}
	if code, _ := e.callRaw(t, "clock", []byte(`{"advance":"1m","extra":1}`)); code != http.StatusBadRequest {
		t.Errorf("an unknown field: %d, want 400", code)
	}
	if got := clock.Offset(); got != 10*time.Minute {
		t.Errorf("refused requests moved the clock to %v", got)
	}

	noClock := httptest.NewServer(http.StripPrefix("/dev", devui.New(devui.Config{Slack: slackfake.New(), SigningSecret: secret})))
	t.Cleanup(noClock.Close)
	if code, _ := (&env{url: noClock.URL + "/dev/"}).call(t, "clock", map[string]string{"advance": "10m"}); code != http.StatusNotFound {
		t.Errorf("an emulator without a clock: %d, want 404", code)
	}
}

// The clock moves forward a bounded distance in all: steps of a week add
// up to at most a year ahead (then every step is refused), never to an
// offset that overflows into the past.
func TestClockForwardIsBoundedInAll(t *testing.T) {
	clock := &devui.Clock{}
	h := devui.New(devui.Config{Slack: slackfake.New(slackfake.WithDemoWorkspace()), SigningSecret: secret, Clock: clock})
	srv := httptest.NewServer(http.StripPrefix("/dev", h))
	t.Cleanup(srv.Close)
	e := &env{url: srv.URL + "/dev/"}
	refused := 0
	for range 60 {
		if code, _ := e.call(t, "clock", map[string]string{"advance": "168h"}); code == http.StatusBadRequest {
			refused++
		}
	}
	if off := clock.Offset(); off > 366*24*time.Hour || off < 300*24*time.Hour || refused == 0 {
		t.Errorf("after 60 steps of a week the clock is %v ahead (%d refused), want at most a year", off, refused)
	}
}
