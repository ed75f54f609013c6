package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/agentrunner"
)

// replyBytes counts what commands send and receive, roughly: the length
// of each command's printed form, arguments and reply included.
type replyBytes struct{ n atomic.Int64 }

func (h *replyBytes) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *replyBytes) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.n.Add(int64(len(cmd.String())))
		return err
	}
}
func (h *replyBytes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			h.n.Add(int64(len(c.String())))
		}
		return err
	}
}

// Another client's token answers 404 like an unknown one, and costs what
// an unknown one does: ownership is read from a small field, so its
// ~900 KB record is never loaded (which took 2.7 ms against 0.5 ms, and
// told that the token exists).
func TestAnotherClientsTokenIsNotLoaded(t *testing.T) {
	e := newEnv(t, envOptions{})
	big := strings.Repeat("x", 900<<10)
	a := e.create(keyBilling, map[string]any{"approvals": []map[string]any{
		{"tool_name": "delete_file", "args": map[string]any{"path": "/x", "blob": big}, "tool_call_id": "c1"},
	}})
	hook := &replyBytes{}
	e.rdb.AddHook(hook)
	probes := []request{
		{key: keySupport, method: http.MethodGet, path: "/v1/approvals/" + a.Token},
		{key: keySupport, method: http.MethodGet, path: "/v1/approvals/" + a.Token + "?wait=1s"},
		{key: keySupport, method: http.MethodDelete, path: "/v1/approvals/" + a.Token},
		{key: keySupport, method: http.MethodPost, path: "/v1/approvals/" + a.Token + "/results", body: `{"approvals":{"c1":true}}`},
	}
	unknown := agentrunner.NewToken()
	for _, p := range probes {
		for _, token := range []string{a.Token, unknown} {
			p := p
			p.path = strings.Replace(p.path, a.Token, token, 1)
			before := hook.n.Load()
			resp := e.do(p)
			read := hook.n.Load() - before
			if resp.status != http.StatusNotFound {
				t.Errorf("%s %s as another client: got %d %s, want 404", p.method, p.path, resp.status, resp.body)
			}
			// The background loops (expiry sweep, callback queue) use the
			// same client; their commands are small.
			if read > 8<<10 {
				t.Errorf("%s %s as another client: %d bytes went through Redis; want the record (%d KB) left unread",
					p.method, p.path, read, len(big)>>10)
			}
		}
	}
	// The owner still reads it whole.
	before := hook.n.Load()
	if resp := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token}); resp.status != http.StatusOK {
		t.Fatalf("owner: got %d %s", resp.status, resp.body)
	}
	if read := hook.n.Load() - before; read < int64(len(big)) {
		t.Errorf("owner's read counted %d bytes, want at least the record's %d: the counter does not see the record", read, len(big))
	}
}
