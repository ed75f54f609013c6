package httpapi_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/store"
)

// fakeResolver answers from a table, so no test uses real DNS.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	ips, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range ips {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

// fakeDNS is the test environment's DNS: agent.example is public, the
// other names resolve into the special-purpose ranges callbacks must not
// reach.
var fakeDNS = fakeResolver{
	"agent.example":    {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
	"metadata.example": {"100.100.100.200"},
	"cgnat.example":    {"100.64.0.1"},
	"bench.example":    {"198.18.0.1"},
	"ietf.example":     {"192.0.0.170"},
	"reserved.example": {"240.0.0.1"},
	"nat64.example":    {"64:ff9b::a9fe:a9fe"},
	"compat.example":   {"::a9fe:a9fe"},
	"mapped.example":   {"::ffff:100.64.0.1"},
	"private.example":  {"10.0.0.5"},
	"loop.example":     {"127.0.0.1"},
	// One bad address among good ones is enough to refuse.
	"mixed.example": {"93.184.215.14", "192.168.1.1"},
}

// In production a callback_url may not point into the network slackbot
// runs in: every address in IANA's special-purpose registries, as a
// literal or as a name that resolves to one, and plain http, are refused
// when the request is made.
func TestCallbackURLsToInternalAddressesAreRefused(t *testing.T) {
	e := newEnv(t, envOptions{publicCallbacksOnly: true})
	one := `{"tool_name":"delete_file","args":{"path":"a"},"tool_call_id":"c1"}`
	for _, u := range []string{
		"https://127.0.0.1:15000/quitquitquit", "https://localhost/cb", "https://10.1.2.3/cb",
		"https://169.254.169.254/latest/meta-data/", "https://[::1]/cb", "https://192.168.0.10/cb",
		"http://127.0.0.1:8080/cb", "http://agent.example/cb",
		// The special-purpose ranges ordinary "is private" checks miss.
		"https://100.64.0.1/cb", "https://100.100.100.200/latest/meta-data/", "https://100.127.255.254/cb",
		"https://198.18.0.1/cb", "https://198.19.255.1/cb", "https://192.0.0.170/cb", "https://240.0.0.1/cb",
		"https://255.255.255.255/cb", "https://0.0.0.0/cb", "https://224.0.0.1/cb",
		"https://[64:ff9b::a9fe:a9fe]/cb", "https://[64:ff9b::808:808]/cb", "https://[::a9fe:a9fe]/cb",
		"https://[::ffff:100.64.0.1]/cb", "https://[::ffff:169.254.169.254]/cb", "https://[::ffff:198.18.0.1]/cb",
		"https://[fd00::1]/cb", "https://[fe80::1]/cb", "https://[2001:db8::1]/cb", "https://[2002:a9fe:a9fe::1]/cb",
		// Names resolving to them.
		"https://metadata.example/cb", "https://cgnat.example/cb", "https://bench.example/cb", "https://ietf.example/cb",
		"https://reserved.example/cb", "https://nat64.example/cb", "https://compat.example/cb", "https://mapped.example/cb",
		"https://private.example/cb", "https://loop.example/cb", "https://mixed.example/cb",
		// A name that does not resolve cannot be checked.
		"https://nowhere.example/cb",
	} {
		resp := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals",
			body: `{"approvals":[` + one + `],"callback_url":"` + u + `"}`})
		if resp.status != http.StatusBadRequest || !strings.Contains(string(resp.body), httpapi.CodeInvalidRequest) {
			t.Errorf("callback_url %s: got %d %s, want 400 invalid_request", u, resp.status, resp.body)
		}
	}
	for _, u := range []string{"https://agent.example/cb", "https://93.184.215.14:8443/cb", "https://[2606:4700::1111]/cb"} {
		resp := e.do(request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals",
			body: `{"approvals":[` + one + `],"callback_url":"` + u + `"}`})
		if resp.status != http.StatusCreated {
			t.Errorf("a public https callback %s: got %d %s, want 201", u, resp.status, resp.body)
		}
	}
}

// memCallbackStore is the one record a deliverer reads, and the attempts
// it records.
type memCallbackStore struct {
	rec      *approval.Request
	attempts []store.CallbackAttempt
}

func (m *memCallbackStore) Get(context.Context, string) (*approval.Request, error) { return m.rec, nil }
func (m *memCallbackStore) AuditCallback(_ context.Context, a store.CallbackAttempt) error {
	m.attempts = append(m.attempts, a)
	return nil
}

// nopQueue settles nothing: Deliver is called directly.
type nopQueue struct{}

func (nopQueue) Read(context.Context, string, time.Duration) ([]store.CallbackJob, error) {
	return nil, nil
}
func (nopQueue) Reclaim(context.Context, string, time.Duration) ([]store.CallbackJob, error) {
	return nil, nil
}
func (nopQueue) ReclaimDead(context.Context, string) ([]store.CallbackJob, error) {
	return nil, nil
}
func (nopQueue) Ack(context.Context, ...string) error                      { return nil }
func (nopQueue) Retry(context.Context, store.CallbackJob, time.Time) error { return nil }
func (nopQueue) Promote(context.Context) (int, error)                      { return 0, nil }

// The deliverer checks the address it actually dials, after DNS: a
// callback whose host resolves (or has rebound since the request was
// made) into a special-purpose range is refused without connecting.
func TestCallbackDialRefusesSpecialPurposeAddresses(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	keys, err := httpapi.ParseKeys(testKeys)
	if err != nil {
		t.Fatal(err)
	}
	// rebound.example now points at the listener on loopback; the others
	// at the ranges the issue lists, which nothing here listens on.
	dns := fakeResolver{"rebound.example": {"127.0.0.1"}}
	for name, ips := range fakeDNS {
		dns[name] = ips
	}
	deliver := func(allowPrivate bool, host string) store.CallbackAttempt {
		t.Helper()
		st := &memCallbackStore{rec: &approval.Request{Token: "tok", Origin: approval.Origin{Client: "billing"}, State: approval.StateResolved,
			CallbackURL: fmt.Sprintf("http://%s/cb", net.JoinHostPort(host, fmt.Sprint(port)))}}
		cbs := httpapi.NewCallbacks(httpapi.CallbacksConfig{Keys: keys, Store: st, Queue: nopQueue{}, Consumer: "t",
			AllowPrivate: allowPrivate, Resolver: dns, Attempts: 1})
		cbs.Deliver(t.Context(), store.CallbackJob{ID: "1", Token: "tok", Attempt: 1})
		if len(st.attempts) != 1 {
			t.Fatalf("%s: %d attempts recorded, want 1", host, len(st.attempts))
		}
		return st.attempts[0]
	}
	for _, host := range []string{
		"rebound.example", "metadata.example", "cgnat.example", "bench.example", "ietf.example", "reserved.example",
		"nat64.example", "compat.example", "mapped.example", "private.example", "mixed.example",
		"127.0.0.1", "100.64.0.1", "::ffff:127.0.0.1", "::1",
	} {
		a := deliver(false, host)
		if a.Outcome != store.CallbackAbandoned || !strings.Contains(a.Error, "special-purpose") {
			t.Errorf("%s: attempt %+v, want it refused as a special-purpose address", host, a)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the listener on loopback accepted %d connections; want none", n)
	}
	// The same delivery with private addresses allowed (dev) connects,
	// so the refusals above are the guard's doing.
	deliver(true, "rebound.example")
	for deadline := time.Now().Add(5 * time.Second); accepted.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("with AllowPrivate the listener accepted %d connections, want 1", n)
	}
}
