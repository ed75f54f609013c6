//go:build unix

package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

// TestHelperProcess is not a test: run by a stdio test as the MCP server,
// it serves the ticket tools plus env (which environment variables it
// got) and crash (exits) over stdin and stdout.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("MCPTOOLS_HELPER") != "1" {
		t.Skip("runs only as the stdio server of another test")
	}
	if pidFile := os.Getenv("MCPTOOLS_PIDFILE"); pidFile != "" {
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	starts := 1
	if countFile := os.Getenv("MCPTOOLS_COUNTFILE"); countFile != "" {
		if b, err := os.ReadFile(countFile); err == nil {
			n, _ := strconv.Atoi(string(b))
			starts = n + 1
		}
		if err := os.WriteFile(countFile, []byte(strconv.Itoa(starts)), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	if msg := os.Getenv("MCPTOOLS_FAIL"); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(3)
	}
	srv := newTicketServer()
	type envArgs struct {
		Names []string `json:"names"`
	}
	mcp.AddTool(srv.srv, &mcp.Tool{Name: "env", Description: "Report environment variables."},
		func(_ context.Context, _ *mcp.CallToolRequest, a envArgs) (*mcp.CallToolResult, any, error) {
			got := map[string]string{}
			for _, n := range a.Names {
				got[n] = os.Getenv(n)
			}
			b, _ := json.Marshal(got)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	mcp.AddTool(srv.srv, &mcp.Tool{Name: "crash", Description: "Exit at once."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "crashing on purpose")
			os.Exit(4)
			return nil, nil, nil
		})
	if os.Getenv("MCPTOOLS_HUGE") == "1" {
		// About 4.5 MiB of tools/list: more than a message may be.
		for i := range 600 {
			srv.srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("huge_%d", i), Description: strings.Repeat("x", 7600), InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
		}
	}
	// Each start has a tool of its own, so that a test sees a restart.
	mcp.AddTool(srv.srv, &mcp.Tool{Name: fmt.Sprintf("start_%d", starts), Description: "Marks a start."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(starts)}}}, nil, nil
		})
	if err := srv.srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// helperConfig runs this test binary as a stdio MCP server.
func helperConfig(name string, env map[string]string) mcptools.Config {
	all := map[string]string{"MCPTOOLS_HELPER": "1"}
	for k, v := range env {
		all[k] = v
	}
	return mcptools.Config{
		Name:     name,
		Command:  []string{os.Args[0], "-test.run=^TestHelperProcess$"},
		Env:      all,
		ReadOnly: []string{"search_*", "env"},
	}
}

// A stdio server gets only the inherited basics and its configured env,
// with ${VAR}s expanded; never slackbot's own secrets. Its tools work, and
// Close stops the process.
func TestStdio(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-not-for-mcp-servers")
	t.Setenv("TEST_GITHUB_TOKEN", "ghp_for_github")
	pidFile := filepath.Join(t.TempDir(), "pid")
	cfg := helperConfig("github", map[string]string{
		"GITHUB_TOKEN":     "${TEST_GITHUB_TOKEN}",
		"MCPTOOLS_PIDFILE": pidFile,
	})
	ts, err := mcptools.NewToolset(t.Context(), []mcptools.Config{cfg})
	if err != nil {
		t.Fatalf("NewToolset: %v", err)
	}
	if st := ts.Status()[0]; !st.Connected {
		t.Fatalf("status = %+v, want connected", st)
	}

	env := findTool(t, ts.Tools(), "github__env")
	got, err := callTool(t, env, `{"names":["SLACK_BOT_TOKEN","GITHUB_TOKEN","PATH"]}`)
	if err != nil {
		t.Fatalf("env: %v", err)
	}
	var vars map[string]string
	if err := json.Unmarshal([]byte(got.(string)), &vars); err != nil {
		t.Fatalf("env returned %v: %v", got, err)
	}
	if vars["SLACK_BOT_TOKEN"] != "" {
		t.Errorf("the stdio server inherited SLACK_BOT_TOKEN=%q", vars["SLACK_BOT_TOKEN"])
	}
	if vars["GITHUB_TOKEN"] != "ghp_for_github" {
		t.Errorf("GITHUB_TOKEN = %q, want the expanded ${TEST_GITHUB_TOKEN}", vars["GITHUB_TOKEN"])
	}
	if vars["PATH"] != os.Getenv("PATH") {
		t.Errorf("PATH = %q, want it inherited", vars["PATH"])
	}
	closeTool := findTool(t, ts.Tools(), "github__close_ticket")
	if got, err := callTool(t, closeTool, `{"id":9}`); err != nil || got != "closed T-9" {
		t.Errorf("close_ticket = %v, %v", got, err)
	}

	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("server pid: %v", err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatalf("server pid %q: %v", b, err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("server process %d is not running before Close: %v", pid, err)
	}
	if err := ts.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// Close waited for the process, so it is gone, not a zombie.
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server process %d after Close: kill -0 = %v, want ESRCH", pid, err)
	}
}

// A stdio server that fails at start-up, or is not there at all, is an
// error naming the server and the command, with what it wrote to stderr.
func TestStdioFailsToStart(t *testing.T) {
	_, err := mcptools.Connect(t.Context(), helperConfig("github", map[string]string{"MCPTOOLS_FAIL": "fatal: bad credentials"}))
	if !errors.Is(err, mcptools.ErrUnavailable) {
		t.Fatalf("Connect = %v, want ErrUnavailable", err)
	}
	for _, want := range []string{"MCP server github is unavailable (stdio " + os.Args[0] + ")", "stderr: fatal: bad credentials"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Connect error %q does not say %q", err, want)
		}
	}

	_, err = mcptools.Connect(t.Context(), mcptools.Config{Name: "github", Command: []string{"no-such-mcp-server-binary", "stdio"}})
	if !errors.Is(err, mcptools.ErrUnavailable) || !strings.Contains(err.Error(), `"no-such-mcp-server-binary": executable file not found`) {
		t.Errorf("Connect to a missing binary = %v", err)
	}
}

// A stdio server that crashes takes only its own tools down: a call of one
// fails with an error the model sees, the other server's tools still work,
// and the Toolset starts the server again.
func TestStdioCrash(t *testing.T) {
	tickets := newTicketServer()
	cfg := helperConfig("github", map[string]string{"MCPTOOLS_COUNTFILE": filepath.Join(t.TempDir(), "starts")})
	ts := newToolset(t, []mcptools.Config{cfg, ticketsConfig},
		byServer(map[string]*ticketServer{"tickets": tickets}),
		mcptools.WithBackoff(time.Millisecond, time.Millisecond))
	findTool(t, ts.Tools(), "github__start_1")

	crash := findTool(t, ts.Tools(), "github__crash")
	_, err := callTool(t, crash, `{}`)
	if err == nil || !strings.Contains(err.Error(), "MCP server github is unavailable (stdio "+os.Args[0]+")") {
		t.Errorf("crash = %v, want the server named unavailable", err)
	}
	search := findTool(t, ts.Tools(), "tickets__search_tickets")
	if got, err := callTool(t, search, `{"query":"x"}`); err != nil || got != "T-1: printer on fire" {
		t.Errorf("the other server's tool after the crash = %v, %v", got, err)
	}

	waitForTools(t, ts, "github restarted", func(names []string) bool { return slices.Contains(names, "github__start_2") })
	env := findTool(t, ts.Tools(), "github__env")
	if _, err := callTool(t, env, `{"names":[]}`); err != nil {
		t.Errorf("a tool of the restarted server: %v", err)
	}
}

// A stdio server whose tools/list is larger than a message may be (4 MiB
// by default) is cut off while it is read: unavailable, with an error and
// a log line naming the limit, its tools not offered.
func TestStdioServerOverItsLimitsIsCutOff(t *testing.T) {
	logs := &logBuffer{}
	ts := newToolset(t, []mcptools.Config{helperConfig("hostile", map[string]string{"MCPTOOLS_HUGE": "1"})},
		mcptools.WithLogger(slog.New(slog.NewJSONHandler(logs, nil))), mcptools.WithBackoff(time.Hour, time.Hour))
	st := ts.Status()[0]
	if st.Connected || st.Err == nil || !strings.Contains(st.Err.Error(), "limits.response") || st.Tools != 0 {
		t.Errorf("status = %+v; want not connected, no tools, an error naming limits.response", st)
	}
	if names := toolNames(ts.Tools()); len(names) != 0 {
		t.Errorf("%d tools offered; want none", len(names))
	}
	if !logs.has(`"mcp_server":"hostile"`, `"limit":"limits.response"`) {
		t.Errorf("no log line names the server and limits.response:\n%s", logs)
	}
}
