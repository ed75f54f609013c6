package redistest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a TCP proxy in front of a Redis that can freeze: while frozen
// it holds every byte clients send, and on Thaw it delivers them, even
// for clients that gave up and closed their connection meanwhile. It
// stands for a stalled network path or a Redis that stops answering and
// later resumes: commands a client timed out on still reach Redis, late.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	frozen  bool
	thawed  chan struct{} // closed on Thaw
	late    chan struct{} // closed when Redis answers bytes held by a freeze
	lateSet bool
	held    chan struct{} // closed when a freeze first holds bytes
	heldSet bool
	wg      sync.WaitGroup
}

// NewProxy starts a proxy to the Redis at addr (host:port) on a loopback
// port; it is closed when t ends.
func NewProxy(t testing.TB, addr string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: proxy: %v", err)
	}
	p := &Proxy{ln: ln, target: addr, thawed: make(chan struct{}), late: make(chan struct{}), held: make(chan struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		p.Thaw()
		p.wg.Wait()
	})
	return p
}

// Addr returns the proxy's host:port; point clients at it.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL returns the proxy's redis:// URL.
func (p *Proxy) URL() string { return "redis://" + p.Addr() + "/0" }

// Freeze makes the proxy hold what clients send from now on.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.frozen {
		p.frozen, p.thawed = true, make(chan struct{})
	}
}

// Thaw delivers what the proxy held and lets traffic through again.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen {
		p.frozen = false
		close(p.thawed)
	}
}

// Late is closed once Redis has answered something a client sent while
// the proxy was frozen: the late command has run.
func (p *Proxy) Late() <-chan struct{} { return p.late }

// Held is closed once a freeze holds bytes a client sent: the command is
// on its way, and reaches Redis only on Thaw.
func (p *Proxy) Held() <-chan struct{} { return p.held }

// gate returns nil when traffic flows, or a channel closed on Thaw.
func (p *Proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen {
		return p.thawed
	}
	return nil
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.wg.Go(func() { p.pipe(c, up) })
	}
}

// pipe carries one connection. Bytes from the client wait out a freeze;
// when the client has gone meanwhile, the upstream connection stays open
// until Redis answered what was delivered late (or 5 s passed).
func (p *Proxy) pipe(c, up net.Conn) {
	answered := make(chan struct{}, 1)
	var heldSent atomic.Bool // bytes held by a freeze were sent, not yet answered
	var down sync.WaitGroup
	down.Go(func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := up.Read(buf)
			if n > 0 {
				if heldSent.Swap(false) {
					p.markLate()
				}
				select {
				case answered <- struct{}{}:
				default:
				}
				_, _ = c.Write(buf[:n]) // the client may be gone
			}
			if err != nil {
				return
			}
		}
	})
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if g := p.gate(); g != nil {
				p.markHeld()
				<-g
				heldSent.Store(true)
			}
			select {
			case <-answered:
			default:
			}
			if _, werr := up.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if heldSent.Load() {
		select {
		case <-answered:
		case <-time.After(5 * time.Second):
		}
	}
	_ = up.Close()
	down.Wait()
	_ = c.Close()
}

func (p *Proxy) markHeld() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.heldSet {
		p.heldSet = true
		close(p.held)
	}
}

func (p *Proxy) markLate() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.lateSet {
		p.lateSet = true
		close(p.late)
	}
}
