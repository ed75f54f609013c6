package main

import (
	"bufio"
	"context"
	"net"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The freeze lever of the crash suite: the test reads the real
// redis-server's MONITOR feed and freezes a process (SIGSTOP) the moment
// Redis ran a command of it that matches, e.g. replica A's claim of a
// run, so that the test can look at Redis as A left it and then kill A.
// No test hook in the program: MONITOR is what an operator has too. A
// process may get a little further than the command before it stops (it
// has Redis's reply in hand), so a test checks in Redis where it stopped.

// monitorLine is one command of MONITOR's feed, e.g.
// 1700000000.123456 [0 127.0.0.1:50000] "evalsha" "ab12…" "3" "slackbot:a:tok" …
var monitorLine = regexp.MustCompile(`^\+?\d+\.\d+ \[\d+ [^\]]+\] (.*)$`)

// freezeAt watches Redis and freezes p at the first command matching
// match (which gets the command's quoted arguments as MONITOR prints
// them). It returns a channel that yields that command once p is frozen;
// the watch ends with the test, or at the first match.
func (c *cluster) freezeAt(p *proc, match func(args string) bool) <-chan string {
	c.t.Helper()
	conn, err := net.DialTimeout("tcp", c.redis.Addr(), 5*time.Second)
	if err != nil {
		c.t.Fatal(err)
	}
	rd := bufio.NewReaderSize(conn, 1<<16)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		c.t.Fatal(err)
	}
	if ok, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(ok, "+OK") {
		c.t.Fatalf("MONITOR: %q, %v", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.t.Cleanup(func() { cancel(); _ = conn.Close() })
	frozen := make(chan string, 1)
	go func() {
		defer conn.Close()
		for ctx.Err() == nil {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			m := monitorLine.FindStringSubmatch(strings.TrimRight(line, "\r\n"))
			if m == nil || !match(m[1]) {
				continue
			}
			if err := p.freeze(); err != nil {
				c.t.Errorf("freeze: %v", err)
			}
			frozen <- m[1]
			return
		}
	}()
	return frozen
}

// resumeClaimBy matches the scripts by which owner's process claims the
// resumption of a run: the waiter's claim (owner in ARGV, the claim key
// in KEYS), the resume queue's (owner + "/queue") and the deciding
// replica's direct claim (owner + "/direct").
func resumeClaimBy(owner string) func(string) bool {
	return func(args string) bool {
		low := strings.ToLower(args)
		if !strings.HasPrefix(low, `"evalsha"`) && !strings.HasPrefix(low, `"eval"`) {
			return false
		}
		return strings.Contains(args, `"slackbot:claim:`) &&
			(strings.Contains(args, `"`+owner+`"`) || strings.Contains(args, `"`+owner+`/queue"`) || strings.Contains(args, `"`+owner+`/direct"`))
	}
}

// quotedArg returns the first of MONITOR's quoted arguments that starts
// with prefix, without its quotes.
func quotedArg(args, prefix string) string {
	i := strings.Index(args, `"`+prefix)
	if i < 0 {
		return ""
	}
	rest := args[i+1:]
	return rest[:strings.IndexByte(rest, '"')]
}

// thaw lets a frozen process go on.
func (p *proc) thaw(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// startSlow starts process name with Redis's replies to it delayed by
// delay (a slow network, through a proxy): what MONITOR shows of it
// reaches the test that much before the process can act on it, so that
// freezeAt stops it before its next command.
func (c *cluster) startSlow(name string, delay time.Duration) *proc {
	c.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			go c.slowLink(client, delay)
		}
	}()
	saved := c.env
	c.env = nil
	for _, kv := range saved {
		if strings.HasPrefix(kv, "REDIS_URL=") {
			kv = "REDIS_URL=redis://" + l.Addr().String() + "/0"
		}
		c.env = append(c.env, kv)
	}
	defer func() { c.env = saved }()
	return c.start(name)
}

// slowLink joins client to Redis, delaying what Redis sends by delay.
func (c *cluster) slowLink(client net.Conn, delay time.Duration) {
	defer client.Close()
	server, err := net.Dial("tcp", c.redis.Addr())
	if err != nil {
		return
	}
	defer server.Close()
	type chunk struct {
		b  []byte
		at time.Time
	}
	chunks := make(chan chunk, 1024)
	go func() {
		defer close(chunks)
		for {
			b := make([]byte, 32<<10)
			n, err := server.Read(b)
			if n > 0 {
				chunks <- chunk{b[:n], time.Now().Add(delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		for ch := range chunks {
			time.Sleep(time.Until(ch.at))
			if _, err := client.Write(ch.b); err != nil {
				return
			}
		}
		_ = client.Close()
	}()
	b := make([]byte, 32<<10)
	for {
		n, err := client.Read(b)
		if n > 0 {
			if _, err := server.Write(b[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
