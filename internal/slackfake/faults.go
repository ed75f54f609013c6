package slackfake

import (
	"math"
	"net/http"
	"slices"
	"time"
)

// rateLimit allows n calls of a method per channel within a window.
type rateLimit struct {
	n      int
	window time.Duration
	recent map[string][]time.Time
}

type failure struct {
	status int
	code   string
	left   int
}

// RateLimit lets at most perChannel calls of method (or "*" for every
// method) through per channel within each window of length per; the others
// get HTTP 429 with a Retry-After header in whole seconds and
// {"ok":false,"error":"ratelimited"}, as Slack answers. Windows follow the
// server's clock. perChannel 0 removes the limit.
func (s *Server) RateLimit(method string, perChannel int, per time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if perChannel <= 0 {
		delete(s.limits, method)
		return
	}
	s.limits[method] = &rateLimit{n: perChannel, window: per, recent: map[string][]time.Time{}}
}

// FailNext makes the next n calls of method (or "*") fail with HTTP status
// before they change anything, like an outage between the client and Slack.
func (s *Server) FailNext(method string, status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails[method] = &failure{status: status, left: n}
}

// ErrorNext makes the next n calls of method (or "*") answer HTTP 200 with
// {"ok":false,"error":code} before they change anything.
func (s *Server) ErrorNext(method, code string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails[method] = &failure{status: http.StatusOK, code: code, left: n}
}

// LoseResponseNext makes the next n calls of method (or "*") take effect
// and then lose their response: the connection is closed before any byte
// is written, as when a network path fails after Slack acted. The client
// sees an error and cannot tell whether the call happened; a client that
// simply retries a chat.postMessage posts twice.
func (s *Server) LoseResponseNext(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drops[method] = n
}

// Delay makes every call of method (or "*") wait d before it is handled;
// the wait ends early when the client gives up. 0 removes the delay.
func (s *Server) Delay(method string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		delete(s.delays, method)
		return
	}
	s.delays[method] = d
}

func (s *Server) delay(method string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.delays[method]; ok {
		return d
	}
	return s.delays["*"]
}

func (s *Server) failure(method string) *failure {
	for _, key := range []string{method, "*"} {
		if f, ok := s.fails[key]; ok && f.left > 0 {
			return f
		}
	}
	return nil
}

// limited counts the call against its method's limit and reports whether
// it is over, with the seconds until a slot frees up.
func (s *Server) limited(req *request) (int, bool) {
	rl, ok := s.limits[req.method]
	if !ok {
		if rl, ok = s.limits["*"]; !ok {
			return 0, false
		}
	}
	now := s.now()
	key := req.str("channel")
	recent := slices.DeleteFunc(rl.recent[key], func(t time.Time) bool { return now.Sub(t) >= rl.window })
	if len(recent) >= rl.n {
		rl.recent[key] = recent
		wait := recent[0].Add(rl.window).Sub(now)
		return max(1, int(math.Ceil(wait.Seconds()))), true
	}
	rl.recent[key] = append(recent, now)
	return 0, false
}

// periodic is a fault that hits every n-th call of a method.
type periodic struct {
	every  int
	seen   int
	status int           // for FailEvery
	slow   time.Duration // for SlowEvery
}

// hit counts a call and reports whether it is an n-th one.
func (p *periodic) hit() bool {
	p.seen++
	return p.seen%p.every == 0
}

// FailEvery makes every n-th call of method (or "*") fail with HTTP
// status before it changes anything, for as long as it is set: a flaky
// Slack, deterministic. n 0 removes it.
func (s *Server) FailEvery(method string, status, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n <= 0 {
		delete(s.failEvery, method)
		return
	}
	s.failEvery[method] = &periodic{every: n, status: status}
}

// SlowEvery makes every n-th call of method (or "*") wait d before it is
// handled (the wait ends early when the client gives up), so a client
// with a shorter timeout sees a timeout. n 0 removes it.
func (s *Server) SlowEvery(method string, d time.Duration, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n <= 0 {
		delete(s.slowEvery, method)
		return
	}
	s.slowEvery[method] = &periodic{every: n, slow: d}
}

// periodicFault counts the call against the periodic fault of method (or
// "*") in faults and returns the fault if the call is hit; s.mu is held.
func periodicFault(faults map[string]*periodic, method string) *periodic {
	for _, key := range []string{method, "*"} {
		if p, ok := faults[key]; ok {
			if p.hit() {
				return p
			}
			return nil
		}
	}
	return nil
}

// slowFor returns how long a call of method waits under SlowEvery.
func (s *Server) slowFor(method string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := periodicFault(s.slowEvery, method); p != nil {
		return p.slow
	}
	return 0
}
