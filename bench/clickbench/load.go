package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slackapprove/slackbot/bot"
)

// newClient returns the load generator's HTTP client: keep-alive
// connections to one host, enough of them for the open-loop bursts, and a
// bound on each request so a stalled server ends the phase.
func newClient() *http.Client {
	return &http.Client{
		Timeout: 20 * time.Second,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 512,
			MaxConnsPerHost:     512,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

// loadResult is what one load phase measured.
type loadResult struct {
	Sent    int
	OK      int // answered 200
	Failed  int // any other status, or no answer
	Elapsed time.Duration
	// Latencies of the requests answered 200: from the time each was
	// scheduled (open loop) or sent (closed loop) until its whole answer
	// was read.
	Latencies []time.Duration
}

// PerSecond is the rate of requests answered 200.
func (r loadResult) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

// Quantile returns the q-quantile of the latencies (nearest rank).
func (r loadResult) Quantile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	l := slices.Clone(r.Latencies)
	slices.Sort(l)
	i := int(q*float64(len(l))+0.5) - 1
	return l[min(max(i, 0), len(l)-1)]
}

// signedPoster sends Slack-signed form posts to one URL.
type signedPoster struct {
	client *http.Client
	url    string
	secret string
}

// post sends body signed at the time of sending, reads the whole answer,
// and reports whether it was a 200.
func (s signedPoster) post(ctx context.Context, body []byte) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	bot.SignSlackRequest(req.Header, s.secret, time.Now(), body)
	resp, err := s.client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// openLoop sends bodies at a fixed offered rate, on the clock: request i is
// due at start + i/rate whether or not earlier ones were answered, and its
// latency counts from when it was due, so queueing anywhere (client,
// server, Redis) shows in the figures instead of slowing the sender down
// (no coordinated omission).
func openLoop(ctx context.Context, p signedPoster, bodies [][]byte, rate float64) loadResult {
	var (
		mu  sync.Mutex
		res = loadResult{Sent: len(bodies), Latencies: make([]time.Duration, 0, len(bodies))}
		wg  sync.WaitGroup
	)
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now().Add(5 * time.Millisecond)
	var last atomic.Int64
	for i, body := range bodies {
		due := start.Add(time.Duration(i) * interval)
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			ok := p.post(ctx, body)
			done := time.Now()
			lat := done.Sub(due)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				res.OK++
				res.Latencies = append(res.Latencies, lat)
			} else {
				res.Failed++
			}
			if n := done.UnixNano(); n > last.Load() {
				last.Store(n)
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Unix(0, last.Load()).Sub(start)
	return res
}

// closedLoop keeps conns requests in flight for d (or until bodies run
// out): each worker sends its next request as soon as the previous one is
// answered. Its rate is the server's capacity at that concurrency.
func closedLoop(ctx context.Context, p signedPoster, bodies [][]byte, conns int, d time.Duration) loadResult {
	var (
		mu   sync.Mutex
		res  = loadResult{Latencies: make([]time.Duration, 0, len(bodies))}
		next atomic.Int64
		wg   sync.WaitGroup
	)
	start := time.Now()
	stop := start.Add(d)
	for range conns {
		wg.Go(func() {
			for time.Now().Before(stop) && ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) {
					return
				}
				sent := time.Now()
				ok := p.post(ctx, bodies[i])
				lat := time.Since(sent)
				mu.Lock()
				res.Sent++
				if ok {
					res.OK++
					res.Latencies = append(res.Latencies, lat)
				} else {
					res.Failed++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	return res
}
