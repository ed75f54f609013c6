package redistest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelOptions shapes the topology StartSentinel starts. The zero
// value is a primary, one replica and three Sentinels that fail over half
// a second after the primary stops answering.
type SentinelOptions struct {
	// Replicas is the number of replicas of the primary; default 1.
	Replicas int
	// Sentinels is the number of Sentinel processes; default 3 (quorum
	// 2: a majority).
	Sentinels int
	// MasterName is the name the Sentinels monitor the primary by;
	// default "mymaster".
	MasterName string
	// DownAfter is Sentinel's down-after-milliseconds: how long the
	// primary may not answer before it is judged down; default 500ms.
	DownAfter time.Duration
	// FailoverTimeout is Sentinel's failover-timeout; default 3s.
	FailoverTimeout time.Duration
	// Password, when set, is the requirepass (and masterauth) of every
	// data node, and the auth-pass the Sentinels use with them.
	Password string
	// SentinelPassword, when set, is the Sentinels' own requirepass.
	SentinelPassword string
	// ServerArgs are extra arguments of every data node (primary and
	// replicas), such as "--appendonly", "yes".
	ServerArgs []string
}

// Sentinel is a Redis primary with replicas monitored by Sentinels, all
// processes of the test on loopback ports, stopped when the test ends. It
// stands for a production Sentinel deployment: KillPrimary and
// WaitFailover make the Sentinels promote a replica, as a crash of the
// primary would.
type Sentinel struct {
	opts      SentinelOptions
	nodes     []*Server // data nodes; nodes[0] started as the primary
	sentinels []*Server
}

// StartSentinel starts the topology of opts in t.TempDir() and returns
// once the replicas are in sync and every Sentinel knows every replica
// and every other Sentinel, so a failover can happen from then on.
func StartSentinel(t testing.TB, opts SentinelOptions) *Sentinel {
	t.Helper()
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	if opts.Sentinels <= 0 {
		opts.Sentinels = 3
	}
	if opts.MasterName == "" {
		opts.MasterName = "mymaster"
	}
	if opts.DownAfter <= 0 {
		opts.DownAfter = 500 * time.Millisecond
	}
	if opts.FailoverTimeout <= 0 {
		opts.FailoverTimeout = 3 * time.Second
	}
	st := &Sentinel{opts: opts}
	nodeArgs := opts.ServerArgs
	if opts.Password != "" {
		nodeArgs = append([]string{"--requirepass", opts.Password, "--masterauth", opts.Password}, nodeArgs...)
	}
	primary := st.startNode(t, "primary", nodeArgs)
	for i := range opts.Replicas {
		args := append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.port)}, nodeArgs...)
		st.startNode(t, fmt.Sprintf("replica%d", i+1), args)
	}
	quorum := opts.Sentinels/2 + 1
	for i := range opts.Sentinels {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("sentinel%d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s, err := startAuth(dir, nil, opts.SentinelPassword, func(s *Server) error {
			s.conf = filepath.Join(dir, "sentinel.conf")
			conf := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d %d\n"+
				"sentinel down-after-milliseconds %[1]s %[4]d\n"+
				"sentinel failover-timeout %[1]s %[5]d\n"+
				"sentinel parallel-syncs %[1]s 1\n",
				opts.MasterName, primary.port, quorum, opts.DownAfter.Milliseconds(), opts.FailoverTimeout.Milliseconds())
			if opts.Password != "" {
				conf += fmt.Sprintf("sentinel auth-pass %s %s\n", opts.MasterName, opts.Password)
			}
			if opts.SentinelPassword != "" {
				conf += fmt.Sprintf("requirepass %s\n", opts.SentinelPassword)
			}
			return os.WriteFile(s.conf, []byte(conf), 0o600)
		})
		if err != nil {
			t.Fatalf("redistest: start sentinel: %v", err)
		}
		t.Cleanup(func() { _ = s.stop() })
		st.sentinels = append(st.sentinels, s)
	}
	st.waitReady(t)
	return st
}

func (st *Sentinel) startNode(t testing.TB, name string, args []string) *Server {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	s, err := startAuth(dir, args, st.opts.Password, nil)
	if err != nil {
		t.Fatalf("redistest: start %s: %v", name, err)
	}
	t.Cleanup(func() { _ = s.stop() })
	st.nodes = append(st.nodes, s)
	return s
}

// waitReady waits until every Sentinel sees the replicas and the other
// Sentinels, and every replica's link to the primary is up.
func (st *Sentinel) waitReady(t testing.TB) {
	t.Helper()
	want := map[string]string{
		"num-slaves":          strconv.Itoa(st.opts.Replicas),
		"num-other-sentinels": strconv.Itoa(st.opts.Sentinels - 1),
	}
	waitFor(t, 30*time.Second, "the sentinels to know every replica and each other", func(ctx context.Context) bool {
		for _, s := range st.sentinels {
			m, err := sentinelMaster(ctx, s, st.opts.MasterName)
			if err != nil {
				return false
			}
			for k, v := range want {
				if m[k] != v {
					return false
				}
			}
		}
		for _, n := range st.nodes[1:] {
			if !linkUp(ctx, n) {
				return false
			}
		}
		return true
	})
}

// URL returns the topology's REDIS_URL:
// redis+sentinel://[:<password>@]<sentinel>,<sentinel>,.../<master name>/0[?sentinel_password=...].
func (st *Sentinel) URL() string {
	u := url.URL{Scheme: "redis+sentinel", Host: strings.Join(st.Addrs(), ","), Path: "/" + st.opts.MasterName + "/0"}
	if st.opts.Password != "" {
		u.User = url.UserPassword("", st.opts.Password)
	}
	if st.opts.SentinelPassword != "" {
		u.RawQuery = url.Values{"sentinel_password": {st.opts.SentinelPassword}}.Encode()
	}
	return u.String()
}

// Addrs returns the Sentinels' host:port addresses.
func (st *Sentinel) Addrs() []string {
	addrs := make([]string, len(st.sentinels))
	for i, s := range st.sentinels {
		addrs[i] = s.Addr()
	}
	return addrs
}

// MasterName returns the name the Sentinels monitor the primary by.
func (st *Sentinel) MasterName() string { return st.opts.MasterName }

// Client returns a go-redis failover client of the topology (as
// store.Open makes of URL), closed when t ends.
func (st *Sentinel) Client(t testing.TB) redis.UniversalClient {
	t.Helper()
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: st.opts.MasterName, SentinelAddrs: st.Addrs(),
		Password: st.opts.Password, SentinelPassword: st.opts.SentinelPassword})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Nodes returns the data nodes (primary and replicas, whatever their
// current roles), in the order they were started.
func (st *Sentinel) Nodes() []*Server { return st.nodes }

// Primary returns the data node the Sentinels name the primary now (the
// first Sentinel that answers is asked).
func (st *Sentinel) Primary(t testing.TB) *Server {
	t.Helper()
	addr := st.primaryAddr(t)
	for _, n := range st.nodes {
		if n.Addr() == addr {
			return n
		}
	}
	t.Fatalf("redistest: the sentinels name %s the primary, which is none of the nodes", addr)
	return nil
}

// Replicas returns the data nodes other than the current primary.
func (st *Sentinel) Replicas(t testing.TB) []*Server {
	t.Helper()
	p := st.Primary(t)
	var rs []*Server
	for _, n := range st.nodes {
		if n != p {
			rs = append(rs, n)
		}
	}
	return rs
}

func (st *Sentinel) primaryAddr(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var last error
	for _, s := range st.sentinels {
		a, err := sentinelPrimary(ctx, s, st.opts.MasterName)
		if err == nil {
			return a
		}
		last = err
	}
	t.Fatalf("redistest: no sentinel names the primary: %v", last)
	return ""
}

// KillPrimary SIGKILLs the current primary, as a crash would, and
// returns it (Restart brings it back; the Sentinels then make it a
// replica of the new primary).
func (st *Sentinel) KillPrimary(t testing.TB) *Server {
	t.Helper()
	p := st.Primary(t)
	p.Kill(t)
	return p
}

// WaitFailover waits until every running Sentinel names a primary other
// than old, that node says it is a primary, and the other running data
// nodes are its replicas in sync; it returns the new primary.
func (st *Sentinel) WaitFailover(t testing.TB, old *Server) *Server {
	t.Helper()
	var primary *Server
	// why is the check that failed last: when the wait runs out, it and
	// the Sentinels' logs say where the failover stopped.
	why := ""
	ok := poll(60*time.Second, func(ctx context.Context) bool {
		addr := ""
		for _, s := range st.sentinels {
			a, err := sentinelPrimary(ctx, s, st.opts.MasterName)
			if err != nil || (addr != "" && addr != a) {
				why = fmt.Sprintf("sentinel %s names %q (%v), another %q", s.Addr(), a, err, addr)
				return false
			}
			addr = a
		}
		if addr == old.Addr() {
			why = "the sentinels still name the old primary " + addr
			return false
		}
		primary = nil
		for _, n := range st.nodes {
			if n.Addr() == addr {
				primary = n
			}
		}
		if primary == nil {
			why = "the sentinels name " + addr + ", no node of the test"
			return false
		}
		if r := role(ctx, primary); r != "master" {
			why = fmt.Sprintf("%s, named the primary, says role %q", addr, r)
			return false
		}
		for _, n := range st.nodes {
			if n != primary && n != old && n.running() && !linkUp(ctx, n) {
				why = "replica " + n.Addr() + " is not in sync with " + addr
				return false
			}
		}
		return true
	})
	if !ok {
		var logs strings.Builder
		for _, s := range st.sentinels {
			fmt.Fprintf(&logs, "\n--- sentinel %s:\n%s", s.Addr(), s.logTail(40))
		}
		t.Fatalf("redistest: waited 60s for the sentinels to promote a replica of %s: %s%s", old.Addr(), why, logs.String())
	}
	return primary
}

// WaitRejoined waits until old, a primary that was failed over and has
// been restarted, is a replica of primary in sync: the Sentinels
// reconfigure it when they see it again (their "+convert-to-slave"), then
// it syncs. When the wait runs out it fails t with the check that failed
// last, old's log and the Sentinels'.
func (st *Sentinel) WaitRejoined(t testing.TB, old, primary *Server) {
	t.Helper()
	why := ""
	ok := poll(90*time.Second, func(ctx context.Context) bool {
		switch r, host, port := role(ctx, old), infoField(ctx, old, "master_host"), infoField(ctx, old, "master_port"); {
		case r != "slave":
			why = fmt.Sprintf("%s says role %q", old.Addr(), r)
			return false
		case net.JoinHostPort(host, port) != primary.Addr():
			why = fmt.Sprintf("%s replicates %s:%s, not %s", old.Addr(), host, port, primary.Addr())
			return false
		case !linkUp(ctx, old):
			why = fmt.Sprintf("%s: master_link_status %q, master_sync_in_progress %q", old.Addr(),
				infoField(ctx, old, "master_link_status"), infoField(ctx, old, "master_sync_in_progress"))
			return false
		}
		return true
	})
	if !ok {
		var logs strings.Builder
		fmt.Fprintf(&logs, "\n--- %s (the old primary):\n%s", old.Addr(), old.logTail(40))
		for _, s := range st.sentinels {
			fmt.Fprintf(&logs, "\n--- sentinel %s:\n%s", s.Addr(), s.logTail(40))
		}
		t.Fatalf("redistest: waited 90s for %s to rejoin as a replica of %s: %s%s", old.Addr(), primary.Addr(), why, logs.String())
	}
}

// logTail returns the last n lines of s's log file.
func (s *Server) logTail(n int) string {
	b, err := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// sentinelMaster returns what Sentinel s knows of the primary named name.
func sentinelMaster(ctx context.Context, s *Server, name string) (map[string]string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), Password: s.password, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	return c.Master(ctx, name).Result()
}

// sentinelPrimary returns the host:port Sentinel s names the primary.
func sentinelPrimary(ctx context.Context, s *Server, name string) (string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr(), Password: s.password, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	a, err := c.GetMasterAddrByName(ctx, name).Result()
	if err != nil {
		return "", err
	}
	if len(a) != 2 {
		return "", fmt.Errorf("sentinel %s: %v is no address", s.Addr(), a)
	}
	return a[0] + ":" + a[1], nil
}

// role returns the "role" of INFO replication of n ("master", "slave"),
// or "" when n does not answer.
func role(ctx context.Context, n *Server) string {
	return infoField(ctx, n, "role")
}

// linkUp reports whether replica n is connected to its primary and in
// sync.
func linkUp(ctx context.Context, n *Server) bool {
	return infoField(ctx, n, "master_link_status") == "up" && infoField(ctx, n, "master_sync_in_progress") == "0"
}

func infoField(ctx context.Context, n *Server, field string) string {
	rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), Password: n.password, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// waitFor polls cond every 50ms until it holds, failing t after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) bool) {
	t.Helper()
	if !poll(timeout, cond) {
		t.Fatalf("redistest: waited %s for %s", timeout, what)
	}
}

// poll calls cond until it holds (true) or timeout has passed (false).
func poll(timeout time.Duration, cond func(ctx context.Context) bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ok := cond(ctx)
		cancel()
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartReplica starts a replica of primary (a server of the test's own,
// stopped when t ends) and returns once it is in sync: with it, WAIT 1 on
// the primary can be confirmed, and Pause on the replica makes WAIT time
// out.
func StartReplica(t testing.TB, primary *Server, args ...string) *Server {
	t.Helper()
	argv := append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.port)}, args...)
	if primary.password != "" {
		argv = append(argv, "--masterauth", primary.password, "--requirepass", primary.password)
	}
	s, err := startAuth(t.TempDir(), argv, primary.password, nil)
	if err != nil {
		t.Fatalf("redistest: start replica: %v", err)
	}
	t.Cleanup(func() { _ = s.stop() })
	waitFor(t, 30*time.Second, "the replica to sync", func(ctx context.Context) bool { return linkUp(ctx, s) })
	return s
}
