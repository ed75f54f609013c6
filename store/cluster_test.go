package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// On a real 3-master Redis Cluster the main lifecycle and the job queue
// run as on one Redis with the hash-tag prefix, opened from a
// redis+cluster:// URL; without the tag the first script is refused
// (its keys are in different slots), which is why the store keeps every
// key in one slot.
func TestLifecycleOnCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	u := "redis+cluster://" + strings.Join(c.Addrs(), ",") + "?dial_timeout=2s"
	rdbA, rdbB := openURL(t, u), openURL(t, u)
	t.Run("lifecycle", func(t *testing.T) { lifecycle(t, rdbA, rdbB, store.DefaultClusterPrefix) })
	t.Run("jobs", func(t *testing.T) { jobLifecycle(t, rdbA, "{slackbot-jobs}:") })
	t.Run("without a hash tag", func(t *testing.T) {
		s := store.New(rdbA, store.Options{Prefix: "slackbot:"})
		a := &approval.Request{Token: agentrunner.NewToken(), Requests: requests("c1"), ExpiresAt: time.Now().Add(time.Hour)}
		err := s.Create(t.Context(), a)
		if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
			t.Errorf("create on a cluster without a hash tag: %v, want CROSSSLOT", err)
		}
	})
	t.Run("wait replicas", func(t *testing.T) {
		// The nodes have no replicas: WAIT 1, sent to the node of the
		// token's slot, times out, and says so.
		s := store.New(rdbA, store.Options{WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond})
		a := &approval.Request{Token: agentrunner.NewToken(), Requests: requests("c1"), ExpiresAt: time.Now().Add(time.Hour)}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		err := s.Create(ctx, a)
		if approval.ErrorCode(err) != approval.EUNCONFIRMED || !strings.Contains(err.Error(), "0 of 1 replicas") {
			t.Errorf("create with WAIT 1 and no replica: %v, want unconfirmed, 0 of 1", err)
		}
	})
}
