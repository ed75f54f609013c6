package mcptools_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

// hostile describes what a hostile test server sends.
type hostile struct {
	tools       int  // tools listed, named t0, t1, ...
	description int  // bytes of each tool's description
	schemaProps int  // properties of the input schema of t0 (~130 bytes each)
	allSchemas  bool // of every tool, not only t0
	pageSize    int  // tools per page of tools/list; 0: the SDK's 1,000
	result      int  // bytes of t0's result text
	// jsonResponse answers with application/json bodies instead of
	// server-sent events.
	jsonResponse bool
}

// newHostileServer is a real MCP server (the Go SDK) on a loopback port
// that sends what h says.
func newHostileServer(t testing.TB, h hostile) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, &mcp.ServerOptions{PageSize: h.pageSize})
	for i := range h.tools {
		props := map[string]any{"q": map[string]any{"type": "string"}}
		if i == 0 || h.allSchemas {
			for p := range h.schemaProps {
				props[fmt.Sprintf("p%d", p)] = map[string]any{"type": "string", "description": strings.Repeat("d", 100)}
			}
		}
		tool := &mcp.Tool{
			Name:        fmt.Sprintf("t%d", i),
			Description: strings.Repeat("x", h.description),
			InputSchema: map[string]any{"type": "object", "properties": props},
		}
		srv.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("r", h.result)}}}, nil
		})
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: h.jsonResponse}))
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return hs
}

// logBuffer collects JSON log lines, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// has reports whether a line holds every one of parts.
func (l *logBuffer) has(parts ...string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for line := range strings.SplitSeq(l.b.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A server that sends more than its limits allow, with the default
// limits (4 MiB a message, 1,000 tools, 64 KiB a schema), is cut off: it
// is marked unavailable with an error naming the limit, a log line names
// the server and the limit, none of its tools is offered, and the other
// server's tools go on working.
func TestServerOverItsLimitsIsCutOff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		h     hostile
		limit string
	}{
		// About 4.5 MiB of tools/list, each tool within the limits.
		{"tools/list larger than a message may be, as an event", hostile{tools: 600, description: 7600}, "limits.response"},
		{"tools/list larger than a message may be, as a JSON body", hostile{tools: 600, description: 7600, jsonResponse: true}, "limits.response"},
		{"too many tools", hostile{tools: 1001}, "limits.tools"},
		{"a schema too large", hostile{tools: 1, schemaProps: 600}, "limits.schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHostileServer(t, tc.h)
			tickets := newTicketServer()
			logs := &logBuffer{}
			ts := newToolset(t, []mcptools.Config{ticketsConfig, {Name: "hostile", URL: hs.URL}},
				byServer(map[string]*ticketServer{"tickets": tickets}),
				mcptools.WithLogger(slog.New(slog.NewJSONHandler(logs, nil))),
				mcptools.WithBackoff(time.Hour, time.Hour))

			st := ts.Status()[1]
			if st.Connected || st.Err == nil || !strings.Contains(st.Err.Error(), tc.limit) || st.Tools != 0 {
				t.Errorf("hostile status = %+v; want not connected, no tools, an error naming %s", st, tc.limit)
			}
			var le *mcptools.LimitError
			if !errors.As(st.Err, &le) || le.Limit != tc.limit || !errors.Is(st.Err, mcptools.ErrUnavailable) {
				t.Errorf("hostile status error = %#v; want an *UnavailableError with a *LimitError of %s", st.Err, tc.limit)
			}
			for _, name := range toolNames(ts.Tools()) {
				if strings.HasPrefix(name, "hostile__") {
					t.Fatalf("tool %s of the server over its limits is offered", name)
				}
			}
			if n := len(ts.Offered()); n != 3 {
				t.Errorf("%d tools offered to a gateway; want tickets' 3", n)
			}
			if !logs.has(`"mcp_server":"hostile"`, `"limit":"`+tc.limit+`"`) {
				t.Errorf("no log line names the server and %s:\n%s", tc.limit, logs)
			}
			search := findTool(t, ts.Tools(), "tickets__search_tickets")
			if got, err := callTool(t, search, `{"query":"x"}`); err != nil || got != "T-1: printer on fire" {
				t.Errorf("the other server's tool = %v, %v", got, err)
			}
		})
	}
}

// A description longer than the limit (8 KiB by default) is cut, not
// refused: the tool is still offered, and a log line says so.
func TestLongDescriptionIsCut(t *testing.T) {
	hs := newHostileServer(t, hostile{tools: 1, description: 10_000})
	logs := &logBuffer{}
	ts := newToolset(t, []mcptools.Config{{Name: "verbose", URL: hs.URL}},
		mcptools.WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	if st := ts.Status()[0]; !st.Connected {
		t.Fatalf("status = %+v; want connected", st)
	}
	tool := findTool(t, ts.Tools(), "verbose__t0")
	if d := tool.Description(); len(d) > 8<<10 || !strings.HasPrefix(d, strings.Repeat("x", 8000)) {
		t.Errorf("description of %d bytes (%q…); want the first 8 KiB at most", len(d), d[:min(len(d), 20)])
	}
	if d := ts.Offered()[0].Tool.Description; len(d) > 8<<10 {
		t.Errorf("offered description of %d bytes; want 8 KiB at most", len(d))
	}
	if !logs.has(`"mcp_server":"verbose"`, `"limit":"limits.description"`, `"tool":"t0"`) {
		t.Errorf("no log line names the server, the tool and limits.description:\n%s", logs)
	}
}

// A tool result larger than a message may be fails the call with an
// error naming the limit, without reading it all.
func TestLargeResultFailsTheCall(t *testing.T) {
	hs := newHostileServer(t, hostile{tools: 1, result: 5 << 20})
	ts := newToolset(t, []mcptools.Config{{Name: "hostile", URL: hs.URL, ReadOnly: []string{"*"}}}, mcptools.WithBackoff(time.Hour, time.Hour))
	tool := findTool(t, ts.Tools(), "hostile__t0")
	_, err := callTool(t, tool, `{"q":"x"}`)
	if err == nil || !strings.Contains(err.Error(), "limits.response") {
		t.Errorf("call returning 5 MiB = %v; want an error naming limits.response", err)
	}
}

// The limits are the server's configuration's: set lower, they cut off
// a server the defaults let through, and a description is cut to its own
// limit.
func TestConfiguredLimits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		h      hostile
		limits mcptools.Limits
		limit  string // "": within the limits
	}{
		{"a message", hostile{tools: 20, description: 4000}, mcptools.Limits{Response: 64 << 10}, mcptools.LimitResponse},
		{"a message, as a JSON body", hostile{tools: 20, description: 4000, jsonResponse: true}, mcptools.Limits{Response: 64 << 10}, mcptools.LimitResponse},
		{"tools", hostile{tools: 3}, mcptools.Limits{Tools: 2}, mcptools.LimitTools},
		{"a schema", hostile{tools: 1, schemaProps: 10}, mcptools.Limits{Schema: 1 << 10}, mcptools.LimitSchema},
		// Each page and each schema within the limits, the whole list
		// not: a listing counts as one message.
		{"pages", hostile{tools: 20, schemaProps: 40, allSchemas: true, pageSize: 1}, mcptools.Limits{Response: 64 << 10}, mcptools.LimitResponse},
		{"within", hostile{tools: 3, description: 300}, mcptools.Limits{Response: 64 << 10, Tools: 3, Description: 100, Schema: 1 << 10}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHostileServer(t, tc.h)
			ts := newToolset(t, []mcptools.Config{{Name: "srv", URL: hs.URL, Limits: tc.limits}}, mcptools.WithBackoff(time.Hour, time.Hour))
			st := ts.Status()[0]
			var le *mcptools.LimitError
			if tc.limit == "" {
				if !st.Connected || st.Tools != tc.h.tools {
					t.Fatalf("status = %+v; want connected with %d tools", st, tc.h.tools)
				}
				if d := findTool(t, ts.Tools(), "srv__t0").Description(); len(d) > tc.limits.Description {
					t.Errorf("description of %d bytes; want at most %d", len(d), tc.limits.Description)
				}
				return
			}
			if st.Connected || !errors.As(st.Err, &le) || le.Limit != tc.limit {
				t.Errorf("status = %+v; want cut off by %s", st, tc.limit)
			}
		})
	}
}
