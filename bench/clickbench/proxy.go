package main

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// countingProxy sits between a Redis client and redis-server on loopback
// and counts what crosses it: bytes each way, and round trips. A round
// trip is a burst of client bytes that follows a reply (or opens the
// connection), so a pipeline or a script call counts once, as the network
// sees it, and server pushes (pub/sub messages) count none.
type countingProxy struct {
	ln     net.Listener
	target string

	up, down, trips atomic.Int64

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// proxyCounts is a snapshot of a countingProxy's counters.
type proxyCounts struct {
	RoundTrips int64
	BytesUp    int64 // client to Redis
	BytesDown  int64 // Redis to client
}

func (c proxyCounts) sub(o proxyCounts) proxyCounts {
	return proxyCounts{c.RoundTrips - o.RoundTrips, c.BytesUp - o.BytesUp, c.BytesDown - o.BytesDown}
}

func startProxy(target string) (*countingProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &countingProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	return p, nil
}

func (p *countingProxy) addr() string { return p.ln.Addr().String() }

func (p *countingProxy) counts() proxyCounts {
	return proxyCounts{p.trips.Load(), p.up.Load(), p.down.Load()}
}

func (p *countingProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.pipe(c) })
	}
}

func (p *countingProxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

// pipe relays one client connection to Redis.
func (p *countingProxy) pipe(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.track(client, true)
	p.track(server, true)
	defer func() {
		p.track(client, false)
		p.track(server, false)
	}()
	// dir is the direction of the last bytes seen: 1 up, 2 down.
	var dir atomic.Int32
	var wg sync.WaitGroup
	wg.Go(func() {
		copyCounting(server, client, func(n int) {
			if dir.Swap(1) != 1 {
				p.trips.Add(1)
			}
			p.up.Add(int64(n))
		})
		server.Close()
	})
	copyCounting(client, server, func(n int) {
		dir.Store(2)
		p.down.Add(int64(n))
	})
	client.Close()
	wg.Wait()
}

func copyCounting(dst io.Writer, src io.Reader, count func(n int)) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			count(n)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// close stops accepting and closes every relayed connection.
func (p *countingProxy) close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
