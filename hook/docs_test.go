package hook

// The README's "Approvals for MCP clients and coding agents" section
// agrees with the code: its routing example parses and routes the agents'
// tools as it says, and its settings snippets are valid JSON that runs the
// hook the way the hook expects.

import (
	"encoding/json"
	"fmt"
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
	if len(yamls) != 1 || len(jsons) != 7 || len(shells) != 2 {
		t.Fatalf("the section has %d yaml, %d json and %d sh blocks, want 1, 7 (Cursor, VS Code, Claude Code PreToolUse and PermissionRequest, Codex PreToolUse and PermissionRequest, Gemini CLI) and 2 (Claude Code, Gemini CLI)", len(yamls), len(jsons), len(shells))
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
		for _, event := range []string{"PreToolUse", "PermissionRequest"} {
			groups, ok := doc.Hooks[event]
			if !ok {
				continue
			}
			agent := hookedAgent(groups[0].Hooks)
			hooked = append(hooked, agent+" "+event)
			checkHookSettings(t, agent, groups[0].Hooks)
			switch {
			case agent == "claude-code" && event == "PreToolUse":
				checkClaudeMatcher(t, groups[0].Matcher)
			case agent == "codex" && event == "PreToolUse":
				checkCodexMatcher(t, groups[0].Matcher)
			case agent == "claude-code" && event == "PermissionRequest" && groups[0].Matcher != "*":
				t.Errorf("Claude Code's PermissionRequest matcher %q, want * (the hook fires only when Claude Code would ask)", groups[0].Matcher)
			}
		}
		if before, ok := doc.Hooks["BeforeTool"]; ok {
			hooked = append(hooked, "gemini")
			checkGeminiSettings(t, before[0].Matcher, before[0].Hooks, block)
		}
	}
	if want := "[claude-code PreToolUse codex PreToolUse codex PermissionRequest claude-code PermissionRequest gemini]"; len(mcpURLs) != 2 || fmt.Sprint(hooked) != want {
		t.Errorf("the JSON blocks configure MCP at %v and hooks for %v; want Cursor and VS Code, and hooks for %s", mcpURLs, hooked, want)
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
	for _, want := range []string{"export SLACKBOT_URL=https://", "SLACKBOT_API_KEY=", "gemini -p ", "--approval-mode=yolo"} {
		if !strings.Contains(shells[1], want) {
			t.Errorf("the Gemini CLI commands lack %q", want)
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
		{"read_file", "agent-reads", true}, {"read_many_files", "agent-reads", true}, {"glob", "agent-reads", true},
		{"grep_search", "agent-reads", true}, {"list_directory", "agent-reads", true},
		{"run_shell_command", "agent-writes", false}, {"write_file", "agent-writes", false}, {"replace", "agent-writes", false},
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

// hookedAgent is the agent a hook's command names: slackbot hook AGENT.
func hookedAgent(hooks []hookHandler) string {
	if len(hooks) > 0 {
		if args := strings.Fields(hooks[0].Command); len(args) > 2 {
			return args[2]
		}
	}
	return ""
}

// codexFailClosed ends Codex's hook commands: a hook that cannot start
// exits 2, a denial, where Codex would run the call past a failed hook.
// agents_codex_test.go's TestCodexExecFailsClosed checks it with Codex.
const codexFailClosed = " || exit 2"

// checkHookSettings: one command hook runs `slackbot hook agent`, whose
// flags the hook accepts, and the agent's timeout for it is longer than
// the hook's own, so the hook's denial arrives before the agent kills it
// (Codex even runs the call past a hook it killed). Codex's command ends
// in codexFailClosed.
func checkHookSettings(t *testing.T, agent string, hooks []hookHandler) {
	t.Helper()
	if len(hooks) != 1 || hooks[0].Type != "command" {
		t.Fatalf("%s: hooks %+v, want one command hook", agent, hooks)
	}
	command := hooks[0].Command
	if agent == "codex" {
		var ok bool
		if command, ok = strings.CutSuffix(command, codexFailClosed); !ok {
			t.Errorf("codex: the hook runs %q, which does not end in %q", hooks[0].Command, codexFailClosed)
		}
	}
	args := strings.Fields(command)
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

// checkCodexMatcher: Codex's matcher (a regular expression on the tool
// name) sends the tools Codex names in its PreToolUse events to the hook:
// its shell tools (Bash), apply_patch and MCP tools.
func checkCodexMatcher(t *testing.T, matcher string) {
	t.Helper()
	re, err := regexp.Compile(matcher)
	if err != nil {
		t.Fatalf("matcher %q: %v", matcher, err)
	}
	for _, tool := range []string{"Bash", "apply_patch", "mcp__github__create_issue"} {
		if !re.MatchString(tool) {
			t.Errorf("Codex's matcher %q does not send %s to the hook", matcher, tool)
		}
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

// checkGeminiSettings: Gemini CLI's settings run `slackbot hook gemini`
// (checkHookSettings) before the writes and MCP tools and not the reads
// (its matcher is a JavaScript RegExp tested, unanchored, on the tool
// name), give it longer than its --timeout (Gemini CLI's timeout is in
// milliseconds, and a killed hook lets the call run), and keep the hook's
// variables where Gemini CLI would strip them.
func checkGeminiSettings(t *testing.T, matcher string, hooks []hookHandler, block string) {
	t.Helper()
	ms := make([]hookHandler, len(hooks))
	for i, h := range hooks {
		ms[i] = h
		if h.Timeout%1000 != 0 {
			t.Errorf("gemini: timeout %d ms, want whole seconds", h.Timeout)
		}
		ms[i].Timeout = h.Timeout / 1000
	}
	checkHookSettings(t, "gemini", ms)
	re, err := regexp.Compile(matcher)
	if err != nil {
		t.Fatalf("gemini: matcher %q: %v", matcher, err)
	}
	for tool, want := range map[string]bool{
		"run_shell_command": true, "write_file": true, "replace": true, "mcp__github__create_issue": true,
		"read_file": false, "read_many_files": false, "glob": false, "grep_search": false, "list_directory": false,
	} {
		if re.MatchString(tool) != want {
			t.Errorf("gemini: matcher %q on %s: got %v, want %v", matcher, tool, !want, want)
		}
	}
	var doc struct {
		Security struct {
			EnvironmentVariableRedaction struct {
				Allowed []string `json:"allowed"`
			} `json:"environmentVariableRedaction"`
		} `json:"security"`
	}
	if err := json.Unmarshal([]byte(block), &doc); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"SLACKBOT_URL", "SLACKBOT_API_KEY"} {
		if !slices.Contains(doc.Security.EnvironmentVariableRedaction.Allowed, v) {
			t.Errorf("gemini: security.environmentVariableRedaction.allowed lacks %s", v)
		}
	}
}
