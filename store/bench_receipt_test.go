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
// (Store.Get: one round trip, the record parsed and its decisions decoded)
// and, but for the first row, hands its results out as every door does
// (approval.Request.Results): without receipts, with receipts as slackbot
// signs them (once per process, remembered), and signing on every hand-out.
// A read alone signs nothing; cpu-µs/op is this process's CPU per read
// (Redis's is not counted), so the difference between the rows is what
// handing out and a receipt cost.
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
		name    string
		handOut bool
		signer  approval.Signer
	}{{"read only", false, nil}, {"without receipts", true, nil}, {"with receipts", true, remembered}, {"signing every read", true, freshSigner{key}}} {
		b.Run(bc.name, func(b *testing.B) {
			s := store.New(rdb, store.Options{Prefix: prefix})
			tokens := createTokens(b, s, 1)
			if _, err := s.Decide(ctx, tokens[0], approve("c1", "UA")); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				a, err := s.Get(ctx, tokens[0])
				if err != nil || a.State != approval.StateResolved {
					b.Fatalf("get: %v, %+v", err, a)
				}
				if !bc.handOut {
					continue
				}
				if res := a.Results(bc.signer); bc.signer != nil && receipt.FromMetadata(res.Metadata["c1"]) == "" {
					b.Fatalf("results %+v: no receipt", res)
				}
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
