package mcptools_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

// cannedServer answers MCP over streamable HTTP (JSON bodies, no
// session) with canned bytes: initialize, ping, and a tools/list of
// listBytes. Its answers are built once, so what a benchmark allocates is
// the client's.
func cannedServer(b *testing.B, listBytes int) *httptest.Server {
	b.Helper()
	var tools bytes.Buffer
	tools.WriteString(`{"tools":[`)
	desc := strings.Repeat("x", 7000)
	for i := 0; tools.Len() < listBytes; i++ {
		if i > 0 {
			tools.WriteByte(',')
		}
		fmt.Fprintf(&tools, `{"name":"t%d","description":%q,"inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}`, i, desc)
	}
	tools.WriteString(`]}`)
	list := tools.Bytes()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil || msg.ID == nil {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		var result []byte
		switch msg.Method {
		case "initialize":
			result = fmt.Appendf(nil, `{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"canned","version":"1"}}`, msg.Params.ProtocolVersion)
		case "tools/list":
			result = list
		default:
			result = []byte(`{}`)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":`, msg.ID)
		_, _ = w.Write(result)
		_, _ = w.Write([]byte("}"))
	}))
	b.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs
}

// BenchmarkHostileToolList connects to a server whose tools/list is 64
// MiB and lists its tools, as every reconnection and health check does:
// B/op is what the client allocates for it, peak-heap-bytes how far the
// live heap grew above what it was before (after a GC; sampled every
// millisecond), both bounded by limits.response once the client enforces
// it. The server's canned 64 MiB are live before and so not counted.
func BenchmarkHostileToolList(b *testing.B) {
	hs := cannedServer(b, 64<<20)
	cfg := mcptools.Config{Name: "hostile", URL: hs.URL}
	var peak atomic.Uint64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		stop := samplePeak(&peak)
		b.StartTimer()
		c, err := mcptools.Connect(b.Context(), cfg)
		if err == nil {
			_, _ = c.Tools(b.Context())
			_ = c.Close()
		}
		b.StopTimer()
		stop()
		b.StartTimer()
	}
	b.ReportMetric(float64(peak.Load()), "peak-heap-bytes")
}

// samplePeak records the largest growth of HeapAlloc above what it is
// now, every millisecond, until the returned function is called.
func samplePeak(peak *atomic.Uint64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			for {
				p := peak.Load()
				if m.HeapAlloc <= base+p || peak.CompareAndSwap(p, m.HeapAlloc-base) {
					break
				}
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}
