package clocktest

import (
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := Stopped(start)
	if got := c.Now(); !got.Equal(start) {
		t.Errorf("stopped: got %v, want %v", got, start)
	}
	c.Add(time.Hour)
	if got, want := c.Now(), start.Add(time.Hour); !got.Equal(want) {
		t.Errorf("stopped, moved: got %v, want %v", got, want)
	}
	var w Clock
	w.Add(time.Hour)
	if got := time.Until(w.Now()); got < 59*time.Minute || got > 61*time.Minute {
		t.Errorf("wall clock moved by an hour: %v ahead, want about 1h", got)
	}
}
