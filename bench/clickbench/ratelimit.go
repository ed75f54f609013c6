package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// rateLimitResult is what posting a burst of cards under Slack's rate
// limit measured.
type rateLimitResult struct {
	Channels, PerChannel int
	Expected             int
	Delivered            int // distinct cards posted
	Duplicated           int // cards posted more than once
	Dropped              int // cards never posted
	Limited              int // chat.postMessage calls answered 429
	// Rate is delivered cards per second per channel, from each channel's
	// first card to its last, averaged over channels.
	Rate    float64
	Elapsed time.Duration
}

// limitedSource and limitedCards name the channels of the rate-limit
// phase: a run started in limitedSource(i) posts its card to
// limitedCards(i) (see the routes file).
func limitedSource(i int) string { return fmt.Sprintf("C0LSRC%02d", i) }
func limitedCards(i int) string  { return fmt.Sprintf("C0LIM%02d", i) }

// rateLimitRoutes are the routes of the rate-limit phase, one per channel.
func rateLimitRoutes(channels int) string {
	var b strings.Builder
	for i := range channels {
		fmt.Fprintf(&b, "  - name: limited-%02d\n    when: {channels: [%s]}\n    channel: %s\n    approvers: {users: [U0ALICE, U0BOB]}\n",
			i, limitedSource(i), limitedCards(i))
	}
	return b.String()
}

// rateLimited starts perChannel runs in each of channels source channels at
// once, while the fake Slack lets one chat.postMessage per channel per
// second through and answers the rest 429 with Retry-After, and waits for
// every card.
func (b *bench) rateLimited(ctx context.Context, base string, channels, perChannel int) (rateLimitResult, error) {
	res := rateLimitResult{Channels: channels, PerChannel: perChannel, Expected: channels * perChannel}
	callsBefore := len(b.fake.Calls("chat.postMessage"))
	b.fake.RateLimit("chat.postMessage", 1, time.Second)
	defer b.fake.RateLimit("chat.postMessage", 0, 0)

	start := time.Now()
	errs := make(chan error, channels)
	for c := range channels {
		go func() {
			texts := make([]string, perChannel)
			for i := range texts {
				name := fmt.Sprintf("rl%02d-%03d", c, i)
				if err := os.WriteFile(filepath.Join(b.sandbox, name), []byte("x"), 0o644); err != nil {
					errs <- err
					return
				}
				texts[i] = "delete the file " + name
			}
			_, err := b.mentions.mentionAll(ctx, base, limitedSource(c), texts)
			errs <- err
		}()
	}
	for range channels {
		if err := <-errs; err != nil {
			return res, err
		}
	}
	// Every card should be through after perChannel seconds; allow for
	// retries that lose the race for a slot a few times.
	deadline := time.Now().Add(time.Duration(perChannel)*time.Second + 30*time.Second)
	count := func() (distinct, total int) {
		for c := range channels {
			seen := map[string]bool{}
			for _, m := range b.fake.Messages(limitedCards(c)) {
				if len(m.Blocks) == 0 || m.ThreadTS != "" {
					continue
				}
				total++
				if v := approveValue(m); !seen[v] {
					seen[v] = true
					distinct++
				}
			}
		}
		return distinct, total
	}
	for {
		distinct, _ := count()
		if distinct >= res.Expected || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A duplicate would land right after its original.
	time.Sleep(time.Second)
	distinct, total := count()
	res.Elapsed = time.Since(start)
	res.Delivered, res.Duplicated, res.Dropped = distinct, total-distinct, res.Expected-distinct
	var rates float64
	for c := range channels {
		var first, last time.Time
		n := 0
		for _, m := range b.fake.Messages(limitedCards(c)) {
			if len(m.Blocks) == 0 {
				continue
			}
			if first.IsZero() {
				first = m.Posted
			}
			last = m.Posted
			n++
		}
		if n > 1 {
			rates += float64(n-1) / last.Sub(first).Seconds()
		}
	}
	res.Rate = rates / float64(channels)
	for _, c := range b.fake.Calls("chat.postMessage")[callsBefore:] {
		if c.Status == http.StatusTooManyRequests {
			res.Limited++
		}
	}
	return res, nil
}
