package agentrunner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MetaAlwaysAllow is the metadata key of a coding agent's "always allow"
// rule. In a request's metadata (DeferredToolRequests.Metadata[id]) it
// holds the rule the agent offered for the call, which an approver may
// choose ("Approve and always allow <rule>"); in the results' metadata
// (DeferredToolResults.Metadata[id]) it holds the rule an approver chose,
// always the one the request offered, for the agent to add to its
// permissions. Only slackbot's Service writes it into results.
const MetaAlwaysAllow = "slackbot_always_allow"

// MetaAgentSession is the metadata key (DeferredToolRequests.Metadata[id])
// of the coding agent's session a call comes from, as its hook names it:
// the audit stream names it beside an always-allow rule.
const MetaAgentSession = "slackbot_agent_session"

// Limits of an AlwaysAllow, so that it fits on a card and in a record.
const (
	// MaxAlwaysAllow bounds the JSON of an AlwaysAllow.
	MaxAlwaysAllow = 2048
	// maxAlwaysAllowRules bounds its rules.
	maxAlwaysAllowRules = 4
	// maxRuleToolName and maxRuleContent bound each rule's parts.
	maxRuleToolName = 200
	maxRuleContent  = 1000
)

// AlwaysAllow is a permission update that lets a coding agent run calls
// like one for good: Claude Code's PermissionUpdate of type "addRules"
// with behavior "allow", as its PermissionRequest hook offers it in
// permission_suggestions and takes it back in
// decision.updatedPermissions (https://code.claude.com/docs/en/hooks,
// "PermissionRequest"; the shape is that of Claude Code 2.1.332's own
// schema of a permission update: type, rules [{toolName, ruleContent?}],
// behavior, destination). Any other update (setMode, addDirectories, a
// deny or ask rule) is none of slackbot's to offer.
type AlwaysAllow struct {
	Type        string           `json:"type"`
	Rules       []PermissionRule `json:"rules"`
	Behavior    string           `json:"behavior"`
	Destination string           `json:"destination"`
}

// PermissionRule is one rule of an AlwaysAllow: a tool, and what of its
// input the rule covers (Bash's "npm test:*"); no content means every
// call of the tool.
type PermissionRule struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

// alwaysAllowDestinations are the settings Claude Code 2.1.332 writes an
// update to: "session" lasts for the session, the others are its settings
// files.
var alwaysAllowDestinations = map[string]string{
	"session":         "this session",
	"localSettings":   "the project's local settings (.claude/settings.local.json)",
	"projectSettings": "the project's shared settings (.claude/settings.json)",
	"userSettings":    "the user's settings (~/.claude/settings.json)",
	"cliArg":          "this run's command-line rules",
}

// ErrNotAlwaysAllow is wrapped by ParseAlwaysAllow's errors.
var ErrNotAlwaysAllow = errors.New("not an always-allow rule")

// ParseAlwaysAllow reads raw as an AlwaysAllow: at most MaxAlwaysAllow
// bytes of one JSON object with only its fields, read one way (CheckArgs),
// of type addRules and behavior allow, to a destination Claude Code
// knows, with 1 to 4 rules, each a tool name and content of printable
// text. Anything else wraps ErrNotAlwaysAllow.
func ParseAlwaysAllow(raw json.RawMessage) (*AlwaysAllow, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > MaxAlwaysAllow {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrNotAlwaysAllow, MaxAlwaysAllow)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrNotAlwaysAllow)
	}
	if err := CheckArgs(raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotAlwaysAllow, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var a AlwaysAllow
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotAlwaysAllow, err)
	}
	switch {
	case a.Type != "addRules" || a.Behavior != "allow":
		return nil, fmt.Errorf("%w: type %q, behavior %q (want addRules, allow)", ErrNotAlwaysAllow, a.Type, a.Behavior)
	case alwaysAllowDestinations[a.Destination] == "":
		return nil, fmt.Errorf("%w: destination %q", ErrNotAlwaysAllow, a.Destination)
	case len(a.Rules) == 0 || len(a.Rules) > maxAlwaysAllowRules:
		return nil, fmt.Errorf("%w: %d rules (want 1 to %d)", ErrNotAlwaysAllow, len(a.Rules), maxAlwaysAllowRules)
	}
	for _, r := range a.Rules {
		if !ruleText(r.ToolName, maxRuleToolName) || (r.RuleContent != "" && !ruleText(r.RuleContent, maxRuleContent)) {
			return nil, fmt.Errorf("%w: rule %.40q: want a tool name and content of printable text", ErrNotAlwaysAllow, r.ToolName)
		}
	}
	return &a, nil
}

// AlwaysAllowFrom reads an AlwaysAllow from a metadata value (a decoded
// JSON object, or its raw JSON), as ParseAlwaysAllow does.
func AlwaysAllowFrom(v any) (*AlwaysAllow, error) {
	raw, ok := v.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotAlwaysAllow, err)
		}
		raw = b
	}
	return ParseAlwaysAllow(raw)
}

// ruleText reports whether s is a rule's part: 1 to max bytes of UTF-8
// with no control or invisible format characters, so that what a card
// shows is the whole rule.
func ruleText(s string, max int) bool {
	if s == "" || len(s) > max || !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) < 0
}

// Rule is the update's rules in the agent's own words, as its permission
// settings write them: "Bash(npm test:*)", "WebFetch(domain:example.com)",
// "mcp__github__get_issue"; several joined by ", ".
func (a *AlwaysAllow) Rule() string {
	parts := make([]string, len(a.Rules))
	for i, r := range a.Rules {
		parts[i] = r.ToolName
		if r.RuleContent != "" {
			parts[i] += "(" + r.RuleContent + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// Where says in words where the agent keeps the rule.
func (a *AlwaysAllow) Where() string { return alwaysAllowDestinations[a.Destination] }

// Equal reports whether a and b are the same update.
func (a *AlwaysAllow) Equal(b *AlwaysAllow) bool {
	return a != nil && b != nil && a.Type == b.Type && a.Behavior == b.Behavior &&
		a.Destination == b.Destination && slices.Equal(a.Rules, b.Rules)
}
