package mcptools_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/agentrunner/mcptools"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  mcptools.Config
		want []mcptools.ConfigProblem // nil: valid
	}{
		{
			name: "stdio",
			cfg:  mcptools.Config{Name: "github", Command: []string{"github-mcp-server", "stdio"}, Env: map[string]string{"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
		},
		{
			name: "http",
			cfg: mcptools.Config{Name: "tickets-2", URL: "https://${TICKETS_HOST}/mcp", Headers: map[string]string{"Authorization": "Bearer ${TICKETS_TOKEN}"},
				ReadOnly: []string{"search_tickets", "get_*"}, Timeout: 30 * time.Second},
		},
		{
			name: "no transport",
			cfg:  mcptools.Config{Name: "x"},
			want: []mcptools.ConfigProblem{{Field: "", Message: "say how to reach the server: command (stdio argv) or url (streamable HTTP)"}},
		},
		{
			name: "both transports",
			cfg:  mcptools.Config{Name: "x", Command: []string{"srv"}, URL: "https://example.com"},
			want: []mcptools.ConfigProblem{{Field: "", Message: "set either command (stdio) or url (streamable HTTP), not both"}},
		},
		{
			name: "negative limits",
			cfg:  mcptools.Config{Name: "x", Command: []string{"srv"}, Limits: mcptools.Limits{Response: -1, Schema: -2}},
			want: []mcptools.ConfigProblem{
				{Field: "limits.response", Message: "must be more than zero, got -1"},
				{Field: "limits.schema", Message: "must be more than zero, got -2"},
			},
		},
		{
			name: "names",
			cfg:  mcptools.Config{Name: "git__hub", Command: []string{"srv"}},
			want: []mcptools.ConfigProblem{{Field: "name", Message: `"git__hub": use letters and digits, with single '-' or '_' between them`}},
		},
		{
			name: "long name",
			cfg:  mcptools.Config{Name: strings.Repeat("a", 33), Command: []string{"srv"}},
			want: []mcptools.ConfigProblem{{Field: "name", Message: `"` + strings.Repeat("a", 33) + `" is longer than 32 characters; tool names (<name>__<tool>) must fit in 64`}},
		},
		{
			name: "bad stdio fields",
			cfg: mcptools.Config{Name: "x", Command: []string{""}, Env: map[string]string{"1BAD": "v", "TOKEN": "$TOKEN"},
				Headers: map[string]string{"A": "b"}, ReadOnly: []string{"", "[a"}, Timeout: -time.Second},
			want: []mcptools.ConfigProblem{
				{Field: "command", Message: "the program (first item) is empty"},
				{Field: "env.1BAD", Message: `"1BAD" is not an environment variable name`},
				{Field: "env.TOKEN", Message: `malformed environment reference: "$TOKEN": write ${NAME} to use a variable, $$ for a literal $`},
				{Field: "headers", Message: "headers apply to HTTP servers only; give a stdio server values in env"},
				{Field: "read_only[0]", Message: "empty pattern"},
				{Field: "read_only[1]", Message: `pattern "[a" is not a valid glob: syntax error in pattern`},
				{Field: "timeout", Message: "must be more than zero, got -1s"},
			},
		},
		{
			name: "bad http fields",
			cfg:  mcptools.Config{Name: "x", URL: "ftp://example.com", Env: map[string]string{"A": "b"}, Headers: map[string]string{"Bad Header": "${UNCLOSED"}},
			want: []mcptools.ConfigProblem{
				{Field: "env", Message: "env applies to stdio servers only; send values to an HTTP server in headers"},
				{Field: "url", Message: `"ftp://example.com": want an http:// or https:// URL`},
				{Field: "headers.Bad Header", Message: `"Bad Header" is not an HTTP header name`},
				{Field: "headers.Bad Header", Message: `malformed environment reference: "${UNCLOSED": ${ without a closing }`},
			},
		},
		{
			name: "url without host",
			cfg:  mcptools.Config{Name: "x", URL: "https:///mcp"},
			want: []mcptools.ConfigProblem{{Field: "url", Message: `"https:///mcp" has no host`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ce *mcptools.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, mcptools.ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want a *ConfigError", err)
			}
			if diff := cmp.Diff(tt.want, ce.Problems); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"TOKEN": "t0k", "HOST": "mcp.example.com", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		in, want string
		wantErr  error
		errText  string
	}{
		{in: "plain", want: "plain"},
		{in: "Bearer ${TOKEN}", want: "Bearer t0k"},
		{in: "https://${HOST}/mcp?k=${TOKEN}", want: "https://mcp.example.com/mcp?k=t0k"},
		{in: "pa$$word", want: "pa$word"},
		{in: "$${TOKEN}", want: "${TOKEN}"},
		{in: "${MISSING} and ${EMPTY} and ${MISSING}", wantErr: mcptools.ErrMissingEnv, errText: "environment variables MISSING, EMPTY are not set"},
		{in: "$TOKEN", wantErr: mcptools.ErrBadReference, errText: `write ${NAME}`},
		{in: "${TOKEN", wantErr: mcptools.ErrBadReference, errText: "without a closing }"},
		{in: "${}", wantErr: mcptools.ErrBadReference, errText: "${} does not name an environment variable"},
		{in: "${1X}", wantErr: mcptools.ErrBadReference, errText: "${1X} does not name"},
		{in: "trailing $", wantErr: mcptools.ErrBadReference},
	}
	for _, tt := range tests {
		got, err := mcptools.Expand(tt.in, lookup)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errText) {
				t.Errorf("Expand(%q) = %q, %v; want an error wrapping %v saying %q", tt.in, got, err, tt.wantErr, tt.errText)
			}
			if syntaxErr := mcptools.CheckReferences(tt.in); errors.Is(tt.wantErr, mcptools.ErrBadReference) != (syntaxErr != nil) {
				t.Errorf("CheckReferences(%q) = %v", tt.in, syntaxErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		if err := mcptools.CheckReferences(tt.in); err != nil {
			t.Errorf("CheckReferences(%q) = %v", tt.in, err)
		}
	}
}

func TestToolName(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	long := strings.Repeat("x", 70)
	tests := []struct {
		server, tool string
		want         string // "" checks only the shape and prefix
	}{
		{"github", "create_issue", "github__create_issue"},
		{"tickets", "get-ticket", "tickets__get-ticket"},
		{"github", "repos.get", "github__repos_get_"},
		{"github", "ünïcode tool", "github__"},
		{"github", long, "github__"},
		{strings.Repeat("s", 32), long, strings.Repeat("s", 32) + "__"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := mcptools.ToolName(tt.server, tt.tool)
		if !valid.MatchString(got) {
			t.Errorf("ToolName(%q, %q) = %q, not a valid model tool name", tt.server, tt.tool, got)
		}
		if strings.HasSuffix(tt.want, "__") || strings.HasSuffix(tt.want, "_") {
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("ToolName(%q, %q) = %q, want prefix %q", tt.server, tt.tool, got, tt.want)
			}
		} else if got != tt.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
		if again := mcptools.ToolName(tt.server, tt.tool); again != got {
			t.Errorf("ToolName(%q, %q) is not stable: %q then %q", tt.server, tt.tool, got, again)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("ToolName(%q, %q) = %q, as for %q", tt.server, tt.tool, got, prev)
		}
		seen[got] = tt.server + "/" + tt.tool
	}
	// Tools whose names differ only in characters that are replaced stay
	// distinct.
	if a, b := mcptools.ToolName("s", "a.b"), mcptools.ToolName("s", "a_b"); a == b {
		t.Errorf("ToolName(s, a.b) = ToolName(s, a_b) = %q", a)
	}
}

func TestConfigTransportHidesSecrets(t *testing.T) {
	tests := []struct {
		cfg  mcptools.Config
		want string
	}{
		{mcptools.Config{Command: []string{"github-mcp-server", "--token", "ghp_secret"}}, "stdio github-mcp-server"},
		{mcptools.Config{URL: "https://user:pw@mcp.example.com/mcp?key=secret#x"}, "streamable HTTP https://mcp.example.com/mcp"},
		{mcptools.Config{}, "in-process transport"},
	}
	for _, tt := range tests {
		if got := tt.cfg.Transport(); got != tt.want {
			t.Errorf("Transport() = %q, want %q", got, tt.want)
		}
	}
}

func TestIsReadOnly(t *testing.T) {
	cfg := mcptools.Config{ReadOnly: []string{"search_tickets", "get_*"}}
	for tool, want := range map[string]bool{
		"search_tickets": true, "get_ticket": true, "get_": true,
		"close_ticket": false, "search_tickets_and_close": false, "forget_ticket": false,
	} {
		if got := cfg.IsReadOnly(tool); got != want {
			t.Errorf("IsReadOnly(%q) = %v, want %v", tool, got, want)
		}
	}
}
