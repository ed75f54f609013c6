package hook

// The README's "Approvals for MCP clients and coding agents" section
// agrees with the code: its routing example parses and routes the agents'
// tools as it says, and its settings snippets are valid JSON that runs the
// hook the way the hook expects.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slackapprove/slackbot/routing"
)

var fenceRE = regexp.MustCompile("(?s)```([a-z]+)\n(.*?)```")

// hookHandler is one command hook in an agent's hook settings.
type hookHandler struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
}

// hookSettings is the hooks part of .claude/settings.json and Codex's
// hooks.json, which share the structure.
type hookSettings struct {
	Hooks map[string][]struct {
		Matcher string        `json:"matcher"`
		Hooks   []hookHandler `json:"hooks"`
	} `json:"hooks"`
}

// readmeSection returns the README's section under heading, up to the
// next heading of the same level.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("the README has no section %q", heading)
	}
	level := heading[:strings.IndexByte(heading, ' ')+1]
	section, _, _ := strings.Cut(rest, "\n"+level)
	return section
}

func TestHookDocsAgreeWithTheCode(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "## Approvals for MCP clients and coding agents")
	var yamls, jsons, shells []string
	for _, m := range fenceRE.FindAllStringSubmatch(section, -1) {
		switch m[1] {
		case "yaml":
			yamls = append(yamls, m[2])
		case "json":
			jsons = append(jsons, m[2])
		case "sh":
			shells = append(shells, m[2])
		}
	}
	if len(yamls) != 1 || len(jsons) != 5 || len(shells) != 1 {
		t.Fatalf("the section has %d yaml, %d json and %d sh blocks, want 1, 5 (Cursor, VS Code, Claude Code twice, Codex) and 1", len(yamls), len(jsons), len(shells))
	}
	checkAgentRoutes(t, yamls[0])

	var mcpURLs, hooked []string
	for i, block := range jsons {
		var doc struct {
			hookSettings
			MCPServers map[string]struct {
				URL string `json:"url"`
			} `json:"mcpServers"`
			Servers map[string]struct {
				Type string `json:"type"`
				URL  string `json:"url"`
			} `json:"servers"`
		}
		if err := json.Unmarshal([]byte(block), &doc); err != nil {
			t.Errorf("JSON block %d is not valid JSON: %v\n%s", i+1, err, block)
			continue
		}
		for _, s := range doc.MCPServers {
			mcpURLs = append(mcpURLs, s.URL)
		}
		for _, s := range doc.Servers {
			if s.Type != "http" {
				t.Errorf("VS Code's server has type %q, want http (streamable HTTP)", s.Type)
			}
			mcpURLs = append(mcpURLs, s.URL)
		}
		if pre, ok := doc.Hooks["PreToolUse"]; ok {
			hooked = append(hooked, "claude-code")
			checkHookSettings(t, "claude-code", pre[0].Hooks)
			checkClaudeMatcher(t, pre[0].Matcher)
		}
		if perm, ok := doc.Hooks["PermissionRequest"]; ok {
			// Codex's, or Claude Code's (claude_permission.go).
			agent := "codex"
			if len(perm) > 0 && len(perm[0].Hooks) > 0 && strings.Contains(perm[0].Hooks[0].Command, "hook claude-code") {
				agent = "claude-code-permission"
				if perm[0].Matcher != "*" {
					t.Errorf("Claude Code's PermissionRequest matcher %q, want * (the hook fires only when Claude Code would ask)", perm[0].Matcher)
				}
			}
			hooked = append(hooked, agent)
			checkHookSettings(t, strings.TrimSuffix(agent, "-permission"), perm[0].Hooks)
		}
	}
	if len(mcpURLs) != 2 || !slices.Equal(hooked, []string{"claude-code", "codex", "claude-code-permission"}) {
		t.Errorf("the JSON blocks configure MCP at %v and hooks for %v; want Cursor and VS Code, Claude Code, Codex and Claude Code's PermissionRequest", mcpURLs, hooked)
	}
	for _, u := range mcpURLs {
		if !strings.HasSuffix(u, "/mcp") {
			t.Errorf("an MCP client is pointed at %s, not slackbot's /mcp", u)
		}
	}
	for _, want := range []string{"claude mcp add --transport http slackbot https://", "/mcp", `--header "Authorization: Bearer `, "--permission-prompt-tool mcp__slackbot__approval_prompt"} {
		if !strings.Contains(shells[0], want) {
			t.Errorf("the Claude Code commands lack %q", want)
		}
	}
}

// checkAgentRoutes: the example auto-approves the read-only tools and
// sends the writes to people.
func checkAgentRoutes(t *testing.T, yaml string) {
	t.Helper()
	routes, err := routing.ParseRoutes([]byte(yaml), "README.md")
	if err != nil {
		t.Fatalf("the routing example does not parse: %v", err)
	}
	if !routes.Named("agent-writes").OfferAlwaysAllow || routes.Named("agent-reads").OfferAlwaysAllow {
		t.Errorf("the example offers Claude Code's always-allow rule on %v, %v; want agent-writes only", routes.Named("agent-reads").OfferAlwaysAllow, routes.Named("agent-writes").OfferAlwaysAllow)
	}
	for _, tt := range []struct {
		tool, route string
		auto        bool
	}{
		{"Read", "agent-reads", true}, {"Grep", "agent-reads", true}, {"Glob", "agent-reads", true},
		{"github__get_issue", "agent-reads", true}, {"mcp__slackbot__github__get_issue", "agent-reads", true},
		{"Bash", "agent-writes", false}, {"Edit", "agent-writes", false}, {"Write", "agent-writes", false},
		{"apply_patch", "agent-writes", false}, {"github__create_issue", "agent-writes", false},
		{"mcp__github__create_issue", "agent-writes", false},
	} {
		r := routes.Match(tt.tool, "")
		if r == nil || r.Name != tt.route {
			t.Errorf("%s goes to %v, want route %s", tt.tool, r, tt.route)
			continue
		}
		v, err := r.Evaluate(t.Context(), routing.PolicyInput{Tool: tt.tool, Args: map[string]any{}, Now: time.Now()})
		if err != nil || (v == routing.AutoApproved) != tt.auto {
			t.Errorf("%s on %s: policy says %s (%v), want auto-approved %v", tt.tool, r.Name, v, err, tt.auto)
		}
	}
}

// checkHookSettings: one command hook runs `slackbot hook agent`, whose
// flags the hook accepts, and the agent's timeout for it is longer than
// the hook's own, so the hook's denial arrives before the agent kills it.
func checkHookSettings(t *testing.T, agent string, hooks []hookHandler) {
	t.Helper()
	if len(hooks) != 1 || hooks[0].Type != "command" {
		t.Fatalf("%s: hooks %+v, want one command hook", agent, hooks)
	}
	args := strings.Fields(hooks[0].Command)
	if len(args) < 3 || args[0] != "slackbot" || args[1] != "hook" || args[2] != agent {
		t.Fatalf("%s: the hook runs %q, want slackbot hook %s", agent, hooks[0].Command, agent)
	}
	wait := DefaultTimeout
	for i := 3; i < len(args); i++ {
		switch {
		case args[i] == "--timeout" && i+1 < len(args):
			d, err := time.ParseDuration(args[i+1])
			if err != nil {
				t.Fatalf("%s: --timeout %s: %v", agent, args[i+1], err)
			}
			wait, i = d, i+1
		default:
			t.Errorf("%s: the hook has an argument it does not take: %s", agent, args[i])
		}
	}
	if agentWait := time.Duration(hooks[0].Timeout) * time.Second; agentWait <= wait {
		t.Errorf("%s: the agent kills the hook after %s, before its --timeout %s ends the wait", agent, agentWait, wait)
	}
}

// checkClaudeMatcher: Claude Code's matcher (a regular expression on the
// tool name) sends the writes and MCP tools to the hook and not the reads.
func checkClaudeMatcher(t *testing.T, matcher string) {
	t.Helper()
	re, err := regexp.Compile("^(?:" + matcher + ")$")
	if err != nil {
		t.Fatalf("matcher %q: %v", matcher, err)
	}
	for tool, want := range map[string]bool{
		"Bash": true, "Edit": true, "Write": true, "mcp__github__create_issue": true,
		"Read": false, "Grep": false, "Glob": false,
	} {
		if re.MatchString(tool) != want {
			t.Errorf("matcher %q on %s: got %v, want %v", matcher, tool, !want, want)
		}
	}
}
