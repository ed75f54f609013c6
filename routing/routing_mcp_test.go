package routing_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
	"github.com/slackapprove/slackbot/routing"
)

const mcpRoutes = `routes:
  - channel: C0APPROVALS
    approvers: {users: ["U0ALICE"]}
`

func TestParseRoutesMCPServers(t *testing.T) {
	src := mcpRoutes + `mcp_servers:
  - name: github
    command: ["github-mcp-server", "stdio"]
    env: {GITHUB_TOKEN: "${GITHUB_TOKEN}"}
  - name: tickets
    url: https://mcp.example.com/mcp
    headers:
      Authorization: "Bearer ${TICKETS_TOKEN}"
    read_only: ["search_tickets", "get_*"]
    timeout: 30s
`
	// The variables are not set: the loader only checks their form.
	rs, err := routing.ParseRoutes([]byte(src), "r.yaml")
	if err != nil {
		t.Fatalf("ParseRoutes: %v", err)
	}
	want := []routing.MCPServer{{
		Name:    "github",
		Command: []string{"github-mcp-server", "stdio"},
		Env:     map[string]string{"GITHUB_TOKEN": "${GITHUB_TOKEN}"},
		Line:    5,
	}, {
		Name:     "tickets",
		URL:      "https://mcp.example.com/mcp",
		Headers:  map[string]string{"Authorization": "Bearer ${TICKETS_TOKEN}"},
		ReadOnly: []string{"search_tickets", "get_*"},
		Timeout:  30 * time.Second,
		Line:     8,
	}}
	if diff := cmp.Diff(want, rs.MCPServers); diff != "" {
		t.Errorf("MCPServers mismatch (-want +got):\n%s", diff)
	}

	wantCfg := mcptools.Config{
		Name: "tickets", URL: "https://mcp.example.com/mcp",
		Headers:  map[string]string{"Authorization": "Bearer ${TICKETS_TOKEN}"},
		ReadOnly: []string{"search_tickets", "get_*"}, Timeout: 30 * time.Second,
	}
	if diff := cmp.Diff(wantCfg, rs.MCPServers[1].Config()); diff != "" {
		t.Errorf("Config() mismatch (-want +got):\n%s", diff)
	}

	var b strings.Builder
	if err := rs.Describe(&b); err != nil {
		t.Fatal(err)
	}
	wantDescribe := `
MCP servers (tools are <name>__<tool>; each needs approval unless read-only):
  SERVER   TRANSPORT                                    READ-ONLY              TIMEOUT
  github   stdio github-mcp-server                      none                   1m
  tickets  streamable HTTP https://mcp.example.com/mcp  search_tickets, get_*  30s
`
	if got := b.String(); !strings.HasSuffix(got, wantDescribe) {
		t.Errorf("Describe ends:\n%s\nwant it to end:\n%s", got, wantDescribe)
	}
}

// A server's limits on what it may send: sizes in bytes, KiB or MiB;
// what is not set takes mcptools' defaults.
func TestParseRoutesMCPLimits(t *testing.T) {
	src := mcpRoutes + `mcp_servers:
  - name: github
    command: ["github-mcp-server", "stdio"]
    limits: {response: 16MiB, tools: 2000, description: 512B, schema: 131072}
  - name: tickets
    url: https://mcp.example.com/mcp
    limits: {schema: 32KiB}
  - name: wiki
    url: https://wiki.example.com/mcp
`
	rs, err := routing.ParseRoutes([]byte(src), "r.yaml")
	if err != nil {
		t.Fatalf("ParseRoutes: %v", err)
	}
	var got []mcptools.Limits
	for _, m := range rs.MCPServers {
		got = append(got, m.Config().Limits)
	}
	want := []mcptools.Limits{
		{Response: 16 << 20, Tools: 2000, Description: 512, Schema: 128 << 10},
		{Schema: 32 << 10},
		{},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
}

// A file without mcp_servers, or with an empty list, has none.
func TestParseRoutesNoMCPServers(t *testing.T) {
	for _, src := range []string{mcpRoutes, mcpRoutes + "mcp_servers: []\n", mcpRoutes + "mcp_servers:\n"} {
		rs, err := routing.ParseRoutes([]byte(src), "r.yaml")
		if err != nil {
			t.Fatalf("ParseRoutes(%q): %v", src, err)
		}
		if len(rs.MCPServers) != 0 {
			t.Errorf("ParseRoutes(%q).MCPServers = %v, want none", src, rs.MCPServers)
		}
	}
}

// Every problem of the section is reported with its line, together with
// the problems of the routes.
func TestParseRoutesMCPServersRefused(t *testing.T) {
	tests := []struct {
		name string
		src  string   // after mcpRoutes (lines 1-3)
		want []string // "LINE: message", in order
	}{
		{
			name: "transport",
			src: `mcp_servers:
  - name: github
  - name: both
    command: ["srv"]
    url: https://example.com/mcp
  - name: ftp
    url: ftp://example.com
  - name: nohost
    url: "https://${HOST_ONLY"
`,
			want: []string{
				`5: MCP server "github": say how to reach the server: command (stdio argv) or url (streamable HTTP)`,
				`6: MCP server "both": set either command (stdio) or url (streamable HTTP), not both`,
				`10: MCP server "ftp": url: "ftp://example.com": want an http:// or https:// URL`,
				`12: MCP server "nohost": url: malformed environment reference: "https://${HOST_ONLY": ${ without a closing }`,
			},
		},
		{
			name: "names",
			src: `mcp_servers:
  - command: ["a"]
  - name: git__hub
    command: ["b"]
  - name: tickets
    command: ["c"]
  - name: tickets
    url: https://example.com/mcp
`,
			want: []string{
				`5: mcp_servers item 1: name: a server needs a name`,
				`6: mcp_servers item 2: name: "git__hub": use letters and digits, with single '-' or '_' between them`,
				`10: MCP server name "tickets" is already used on line 8`,
			},
		},
		{
			name: "fields",
			src: `mcp_servers:
  - name: github
    command: ["github-mcp-server"]
    env:
      GITHUB_TOKEN: $GITHUB_TOKEN
      PORT: 8080
    headers: {Authorization: x}
    read_only: ["get_*", "[bad"]
    timeout: 0s
    transport: stdio
`,
			want: []string{
				`8: MCP server "github": env.GITHUB_TOKEN: malformed environment reference: "$GITHUB_TOKEN": write ${NAME} to use a variable, $$ for a literal $`,
				`9: env.PORT: want text, got integer 8080`,
				`10: MCP server "github": headers: headers apply to HTTP servers only`,
				`11: MCP server "github": read_only[1]: pattern "[bad" is not a valid glob`,
				`12: timeout: must be more than zero, got 0s`,
				`13: unknown field "transport" in mcp_servers item 1 (known fields: name, command, env, url, headers, read_only, timeout, limits)`,
			},
		},
		{
			name: "limits",
			src: `mcp_servers:
  - name: github
    command: ["github-mcp-server"]
    limits:
      response: 4MB
      tools: -1
      description: 0
      schema: [64KiB]
      size: 1MiB
  - name: tickets
    url: https://example.com/mcp
    limits: 4MiB
`,
			want: []string{
				`8: limits.response: want a size in bytes like 65536, 64KiB or 4MiB, got the text "4MB"`,
				`9: limits.tools: must be more than zero, got -1`,
				`10: limits.description: must be more than zero, got 0`,
				`11: limits.schema: want a size in bytes like 65536, 64KiB or 4MiB, got a list`,
				`12: unknown field "size" in limits (known fields: response, tools, description, schema)`,
				`15: limits must be a mapping of fields`,
			},
		},
		{
			name: "types",
			src: `mcp_servers:
  - name: github
    command: github-mcp-server stdio
  - just a string
mcp_server: []
`,
			want: []string{
				`6: command: want a list, like ["github-mcp-server stdio"]`,
				`7: mcp_servers item 2 must be a mapping of fields`,
				`8: unknown field "mcp_server" in the routing file; did you mean "mcp_servers"?`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := routing.ParseRoutes([]byte(mcpRoutes+tt.src), "r.yaml")
			var re *routing.RoutesError
			if !errors.As(err, &re) {
				t.Fatalf("ParseRoutes = %v, want a *RoutesError", err)
			}
			var got []string
			for _, p := range re.Problems {
				got = append(got, fmt.Sprintf("%d: %s", p.Line, p.Message))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems:\n%s\nwant %d:\n%s", strings.Join(got, "\n"), len(tt.want), strings.Join(tt.want, "\n"))
			}
			for i := range tt.want {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("problem %d:\n got %q\nwant %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}
