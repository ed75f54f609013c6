package devui

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
)

// Clock is the dev workspace's clock for slackbot's own timekeeping
// (deadlines, reminders, escalations, grants): the wall clock plus how far
// the page moved it forward, so a person sees a reminder due in ten
// minutes without waiting ten minutes. Signatures and Slack timestamps
// keep the wall clock: slackbot checks signatures against its host's.
type Clock struct{ offset atomic.Int64 }

// Now returns the wall clock plus the offset.
func (c *Clock) Now() time.Time { return time.Now().Add(c.Offset()) }

// Offset returns how far the clock was moved forward.
func (c *Clock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// Advance moves the clock forward by d and returns the new offset.
func (c *Clock) Advance(d time.Duration) time.Duration { return time.Duration(c.offset.Add(int64(d))) }

// maxAdvance bounds one step of the page's clock: past a week every
// request has expired anyway; maxOffset bounds all the steps together.
const (
	maxAdvance = 7 * 24 * time.Hour
	maxOffset  = 366 * 24 * time.Hour
)

// advanceWithin moves the clock forward by d unless that takes it more
// than maxOffset ahead; ok is false, and nothing moved, then.
func (c *Clock) advanceWithin(d time.Duration) (off time.Duration, ok bool) {
	for {
		cur := c.offset.Load()
		if time.Duration(cur)+d > maxOffset {
			return time.Duration(cur), false
		}
		if c.offset.CompareAndSwap(cur, cur+int64(d)) {
			return time.Duration(cur) + d, true
		}
	}
}

type clockRequest struct {
	// Advance is a Go duration, e.g. "10m".
	Advance string `json:"advance"`
}

type clockResponse struct {
	OK bool `json:"ok"`
	// Offset is how far ahead of the wall clock slackbot's clock now is.
	Offset string `json:"offset"`
	// Minutes is the offset in whole minutes, for the page's badge.
	Minutes int64 `json:"minutes"`
}

// handleClock moves slackbot's clock forward (POST /clock
// {"advance":"10m"}); without a Clock in the Config it answers 404.
func (h *Handler) handleClock() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.clock == nil {
			h.writeError(w, r, fmt.Errorf("this emulator has no clock to move: %w", errNotFound))
			return
		}
		var req clockRequest
		if err := decodeRequest(w, r, &req); err != nil {
			h.writeError(w, r, err)
			return
		}
		d, err := time.ParseDuration(req.Advance)
		if err != nil || d <= 0 || d > maxAdvance {
			h.writeError(w, r, fmt.Errorf("advance must be a duration between 1ns and %s, like 10m: %w", maxAdvance, errBadRequest))
			return
		}
		off, ok := h.clock.advanceWithin(d)
		if !ok {
			h.writeError(w, r, fmt.Errorf("the clock is %s ahead already, and goes at most %s ahead: %w", off, maxOffset, errBadRequest))
			return
		}
		h.log.Info("dev clock moved forward", "by", d, "offset", off)
		writeJSON(w, http.StatusOK, clockResponse{OK: true, Offset: off.String(), Minutes: int64(off / time.Minute)})
	})
}
