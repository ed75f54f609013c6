package store_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// freshSigner signs every receipt anew (a new Signer each time, so
// nothing is remembered): the cost of signing on every read.
type freshSigner struct{ key *receipt.Key }

func (f freshSigner) Sign(c receipt.Claims) (string, error) {
	s, err := receipt.NewSigner(f.key, "", 0)
	if err != nil {
		return "", err
	}
	return s.Sign(c)
}

// cpuTime is this process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReadReceipts reads a resolved request of one approved call
// (Store.Get: one round trip, the record parsed, its results derived)
// without receipts, with receipts as slackbot signs them (once per
// process, remembered), and signing on every read; cpu-µs/op is this
// process's CPU per read (Redis's is not counted), so the difference
// between the rows is what a receipt costs.
func BenchmarkReadReceipts(b *testing.B) {
	rdb, prefix := redistest.Client(b)
	key, err := receipt.NewKey([]byte(strings.Repeat("b", receipt.SeedSize)))
	if err != nil {
		b.Fatal(err)
	}
	remembered, err := receipt.NewSigner(key, "", 0)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, bc := range []struct {
		name   string
		signer approval.Signer
	}{{"without receipts", nil}, {"with receipts", remembered}, {"signing every read", freshSigner{key}}} {
		b.Run(bc.name, func(b *testing.B) {
			s := store.New(rdb, store.Options{Prefix: prefix, Receipts: bc.signer})
			tokens := createTokens(b, s, 1)
			if _, err := s.Decide(ctx, tokens[0], approve("c1", "UA")); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				a, err := s.Get(ctx, tokens[0])
				if err != nil || (bc.signer != nil && receipt.FromMetadata(a.Results.Metadata["c1"]) == "") {
					b.Fatalf("get: %v, results %+v", err, a.Results)
				}
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
