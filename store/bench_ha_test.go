package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// BenchmarkDecideWaitReplicas measures what REDIS_WAIT_REPLICAS=1 costs:
// decisions on a primary with one replica, without WAIT and with WAIT 1
// after every decision, on the same servers in the same run, one at a
// time (a click's latency at ordinary load) and from 32 goroutines
// (saturation). It reports decisions/s and each Decide's p50 and p99.
func BenchmarkDecideWaitReplicas(b *testing.B) {
	primary := redistest.StartServer(b)
	redistest.StartReplica(b, primary)
	rdb := redis.NewClient(&redis.Options{Addr: primary.Addr(), ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = rdb.Close() })
	for _, load := range []struct {
		name        string
		parallelism int
	}{{"serial", 0}, {"32-goroutines", 16}} {
		for _, n := range []int{0, 1} {
			b.Run(fmt.Sprintf("%s/wait=%d", load.name, n), func(b *testing.B) {
				s := store.New(rdb, store.Options{Prefix: redistest.Prefix(b), WaitReplicas: n})
				benchDecide(b, s, load.parallelism)
			})
		}
	}
}

// BenchmarkDecideCluster is BenchmarkDecide on a 3-master Redis Cluster
// with the hash-tag prefix: every key on one shard, as slackbot runs there.
func BenchmarkDecideCluster(b *testing.B) {
	c := redistest.StartCluster(b, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = rdb.Close() })
	benchDecide(b, store.New(rdb, store.Options{Prefix: "{" + redistest.Prefix(b) + "}:"}), 16)
}

// benchDecide decides b.N tokens of s from parallelism × GOMAXPROCS
// goroutines (0: one after the other) and reports decisions/s and the p50
// and p99 of one Decide.
func benchDecide(b *testing.B, s *store.Store, parallelism int) {
	ctx := context.Background()
	n := b.N
	tokens := createTokens(b, s, n)
	var next atomic.Int64
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	decide := func(i int64) time.Duration {
		t0 := time.Now()
		if _, err := s.Decide(ctx, tokens[i%int64(n)], approve("c1", "UA")); err != nil {
			b.Error(err) // not Fatal: called from RunParallel's goroutines
		}
		return time.Since(t0)
	}
	b.ResetTimer()
	start := time.Now()
	if parallelism == 0 {
		for i := range int64(n) {
			lat = append(lat, decide(i))
		}
	} else {
		b.SetParallelism(parallelism)
		b.RunParallel(func(pb *testing.PB) {
			var mine []time.Duration
			for pb.Next() {
				mine = append(mine, decide(next.Add(1)-1))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "decisions/s")
}
