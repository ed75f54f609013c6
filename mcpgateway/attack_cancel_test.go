package mcpgateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/mcpgateway"
)

// gatedStore holds the first TrackRequestID until released: the moment
// between a tools/call reaching a replica and its id being tracked.
type gatedStore struct {
	mcpgateway.Store
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func (g *gatedStore) TrackRequestID(ctx context.Context, client, rpcID, token string, expires time.Time) (bool, error) {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.reached)
		<-g.release
	}
	return g.Store.TrackRequestID(ctx, client, rpcID, token, expires)
}

// TestAttackCancelBeforeTracked: the client's notifications/cancelled
// reaches another replica while its tools/call is still on its way to
// being tracked (the call's handler checks the arguments, the upstream's
// reachability, the idempotency key first). The cancel must not be lost:
// once the call gets going it is cancelled, and a later Approve runs
// nothing.
func TestAttackCancelBeforeTracked(t *testing.T) {
	a := newEnv(t, envOptions{})
	b := newEnv(t, envOptions{shared: a})
	g := &gatedStore{Store: a.store, reached: make(chan struct{}), release: make(chan struct{})}
	gw, err := mcpgateway.NewHandler(mcpgateway.Config{
		Authenticate: testKeys, Approvals: a.svc, Waiter: a.tokens, Store: g, Upstream: a.toolset,
		ProgressEvery: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(func() { gw.Close(); srv.CloseClientConnections(); srv.Close() })

	const msg = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"tickets__create_issue","arguments":{"title":"cancelled at once"}}}`
	ch := postRPCAsync(t, srv.URL, msg)
	select {
	case <-g.reached:
	case <-time.After(20 * time.Second):
		t.Fatal("the call never reached its tracking")
	}
	if status := notify(t, b.srv.URL+"/mcp", billingKey, cancelled(`7`)); status != http.StatusAccepted {
		t.Fatalf("cancel: status %d; want 202", status)
	}
	close(g.release)

	token, callID, _ := a.waitCard(1)
	a.waitCancelled(token, 1)
	a.cancelledRunsNothing(ch, b, token, callID)
}
