package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of the test's own: masters on loopback ports
// (no replicas), the 16384 slots split evenly between them, stopped when
// the test ends.
type Cluster struct {
	nodes []*Server
}

// StartCluster starts a cluster of masters nodes (3 or more make a
// cluster that Redis accepts for production; 1 works too) and returns once
// every node reports cluster_state:ok.
func StartCluster(t testing.TB, masters int) *Cluster {
	t.Helper()
	if masters <= 0 {
		masters = 3
	}
	c := &Cluster{}
	for i := range masters {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("node%d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s, err := start(dir, []string{"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--cluster-node-timeout", "5000"})
		if err != nil {
			t.Fatalf("redistest: start cluster node: %v", err)
		}
		t.Cleanup(func() { _ = s.stop() })
		c.nodes = append(c.nodes, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	per := 16384 / masters
	for i, n := range c.nodes {
		first, last := i*per, (i+1)*per-1
		if i == masters-1 {
			last = 16383
		}
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr()})
		err := rdb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", first, last).Err()
		if err == nil && i > 0 {
			err = rdb.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(c.nodes[0].port)).Err()
		}
		_ = rdb.Close()
		if err != nil {
			t.Fatalf("redistest: cluster node %s: %v", n.Addr(), err)
		}
	}
	waitFor(t, 30*time.Second, "the cluster to be ok on every node", func(ctx context.Context) bool {
		for _, n := range c.nodes {
			rdb := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
			info, err := rdb.ClusterInfo(ctx).Result()
			_ = rdb.Close()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(masters)) {
				return false
			}
		}
		return true
	})
	return c
}

// Addrs returns the nodes' host:port addresses.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Client returns a go-redis cluster client of the cluster, closed when t
// ends.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}
