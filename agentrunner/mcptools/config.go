package mcptools

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
)

// DefaultTimeout bounds one tool call when Config.Timeout is zero.
const DefaultTimeout = time.Minute

// MaxNameLength is the longest server name: a tool is offered to the model
// as "<server>__<tool>" and model APIs take names of at most 64 characters,
// so the server's part is kept short enough to leave room for the tool's.
const MaxNameLength = 32

// Config says how to reach one MCP server and which of its tools need no
// approval. It mirrors one entry of the routing file's mcp_servers section.
type Config struct {
	// Name identifies the server in tool names ("<name>__<tool>"),
	// confirmations and errors. Letters and digits, with single '-' or '_'
	// between them; at most MaxNameLength characters.
	Name string
	// Command is the argv of a server spoken to over stdio. Exactly one of
	// Command and URL is set.
	Command []string
	// Env is added to the environment of a stdio server, which otherwise
	// inherits only HOME, LANG, LOGNAME, PATH, SHELL, TERM, TMPDIR, TZ and
	// USER from slackbot's. Values may reference ${VAR}s.
	Env map[string]string
	// URL is the endpoint of a streamable-HTTP server; http or https. It
	// may reference ${VAR}s.
	URL string
	// Headers are sent with every request to URL's host. Values may
	// reference ${VAR}s.
	Headers map[string]string
	// ReadOnly are globs (path.Match syntax) on the server's own tool names;
	// matching tools run without approval. Every other tool of the server
	// waits for a decision.
	ReadOnly []string
	// Timeout bounds one tool call; zero means DefaultTimeout.
	Timeout time.Duration
	// Limits bound what the server may send; zero fields take the
	// defaults (see Limits).
	Limits Limits
}

// inheritedEnv lists the variables a stdio server inherits from slackbot's
// environment. Everything else, Slack tokens and API keys included, stays
// out of the child unless Config.Env passes it on explicitly.
var inheritedEnv = []string{"HOME", "LANG", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ", "USER"}

// Transport describes how the server is reached, for messages:
// "stdio github-mcp-server" or "streamable HTTP https://host/mcp". It
// shows neither arguments, credentials nor the query of the URL, which may
// hold secrets.
func (c Config) Transport() string {
	switch {
	case len(c.Command) > 0:
		return "stdio " + c.Command[0]
	case c.URL != "":
		u, err := url.Parse(c.URL)
		if err != nil {
			return "streamable HTTP (unparsable URL)"
		}
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		return "streamable HTTP " + u.String()
	}
	return "in-process transport"
}

// IsReadOnly reports whether the server's tool named tool matches one of
// the ReadOnly globs and so runs without approval.
func (c Config) IsReadOnly(tool string) bool {
	for _, g := range c.ReadOnly {
		// Invalid patterns are refused by Validate; one that slips through
		// matches nothing, which keeps the tool behind approval.
		if ok, _ := path.Match(g, tool); ok {
			return true
		}
	}
	return false
}

func (c Config) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// ErrInvalidConfig is wrapped by every *ConfigError.
var ErrInvalidConfig = errors.New("invalid MCP server configuration")

// ConfigProblem is one reason a server's configuration is refused.
type ConfigProblem struct {
	// Field names the offending field as the routing file spells it:
	// "name", "command", "env.GITHUB_TOKEN", "url", "headers.Authorization",
	// "read_only[1]", "timeout", "limits.response"; empty when about the
	// whole entry.
	Field   string
	Message string
}

// ConfigError lists every problem of one server's configuration.
type ConfigError struct {
	Server   string
	Problems []ConfigProblem
}

// Error names the server and lists the problems.
func (e *ConfigError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		if p.Field == "" {
			parts[i] = p.Message
		} else {
			parts[i] = p.Field + ": " + p.Message
		}
	}
	return fmt.Sprintf("MCP server %s: %s", e.Server, strings.Join(parts, "; "))
}

// Unwrap lets callers test for ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

var (
	serverNamePattern = regexp.MustCompile(`^[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*$`)
	envNamePattern    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// headerNamePattern is RFC 9110's token.
	headerNamePattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// Validate checks the configuration without reading the environment, so
// that a routing file can be checked where its secrets are not set. It
// returns a *ConfigError listing every problem, or nil.
func (c Config) Validate() error { return c.validate(true) }

func (c Config) validate(needTransport bool) error {
	var ps []ConfigProblem
	add := func(field, format string, args ...any) {
		ps = append(ps, ConfigProblem{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if err := ValidateName(c.Name); err != nil {
		add("name", "%v", err)
	}
	switch {
	case len(c.Command) > 0 && c.URL != "":
		add("", "set either command (stdio) or url (streamable HTTP), not both")
	case len(c.Command) == 0 && c.URL == "" && needTransport:
		add("", "say how to reach the server: command (stdio argv) or url (streamable HTTP)")
	}
	if len(c.Command) > 0 && strings.TrimSpace(c.Command[0]) == "" {
		add("command", "the program (first item) is empty")
	}
	if len(c.Env) > 0 && len(c.Command) == 0 {
		add("env", "env applies to stdio servers only; send values to an HTTP server in headers")
	}
	for _, k := range sortedKeys(c.Env) {
		if !envNamePattern.MatchString(k) {
			add("env."+k, "%q is not an environment variable name", k)
		}
		if err := CheckReferences(c.Env[k]); err != nil {
			add("env."+k, "%v", err)
		}
	}
	if c.URL != "" {
		if err := checkURL(c.URL); err != nil {
			add("url", "%v", err)
		}
	}
	if len(c.Headers) > 0 && c.URL == "" {
		add("headers", "headers apply to HTTP servers only; give a stdio server values in env")
	}
	for _, k := range sortedKeys(c.Headers) {
		if !headerNamePattern.MatchString(k) {
			add("headers."+k, "%q is not an HTTP header name", k)
		}
		if err := CheckReferences(c.Headers[k]); err != nil {
			add("headers."+k, "%v", err)
		}
	}
	for i, g := range c.ReadOnly {
		field := fmt.Sprintf("read_only[%d]", i)
		if g == "" {
			add(field, "empty pattern")
			continue
		}
		if _, err := path.Match(g, ""); err != nil {
			add(field, "pattern %q is not a valid glob: %v", g, err)
		}
	}
	if c.Timeout < 0 {
		add("timeout", "must be more than zero, got %s", c.Timeout)
	}
	c.Limits.validate(add)
	if len(ps) > 0 {
		name := c.Name
		if name == "" {
			name = "(unnamed)"
		}
		return &ConfigError{Server: name, Problems: ps}
	}
	return nil
}

// ValidateName checks a server name: letters and digits with single '-' or
// '_' between them, at most MaxNameLength characters. A name cannot contain
// "__", so the first "__" of a tool name always ends the server's part.
func ValidateName(name string) error {
	switch {
	case name == "":
		return errors.New("a server needs a name")
	case len(name) > MaxNameLength:
		return fmt.Errorf("%q is longer than %d characters; tool names (<name>__<tool>) must fit in 64", name, MaxNameLength)
	case !serverNamePattern.MatchString(name):
		return fmt.Errorf("%q: use letters and digits, with single '-' or '_' between them", name)
	}
	return nil
}

// checkURL checks the URL with its references replaced by a placeholder:
// the scheme must be written out, http or https, and there must be a host.
func checkURL(raw string) error {
	if err := CheckReferences(raw); err != nil {
		return err
	}
	lower := strings.ToLower(raw)
	if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
		return fmt.Errorf("%q: want an http:// or https:// URL", raw)
	}
	placeholder, _ := expand(raw, func(string) (string, bool) { return "x", true })
	u, err := url.Parse(placeholder)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", raw, err)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	return nil
}

// ErrMissingEnv is matched (errors.Is) by every *MissingEnvError.
var ErrMissingEnv = errors.New("environment variable not set")

// MissingEnvError names the environment variables a configuration
// references that are not set, or are empty.
type MissingEnvError struct {
	// Server is the server's name; empty from Expand.
	Server string
	// Vars are the missing variables, in order of first use.
	Vars []string
	// Fields are where they are used ("headers.Authorization"); empty from
	// Expand.
	Fields []string
}

// Error names the server, the variables and where they are used.
func (e *MissingEnvError) Error() string {
	var b strings.Builder
	if e.Server != "" {
		fmt.Fprintf(&b, "MCP server %s: ", e.Server)
	}
	if len(e.Vars) == 1 {
		fmt.Fprintf(&b, "environment variable %s is not set", e.Vars[0])
	} else {
		fmt.Fprintf(&b, "environment variables %s are not set", strings.Join(e.Vars, ", "))
	}
	if len(e.Fields) > 0 {
		fmt.Fprintf(&b, " (used in %s)", strings.Join(e.Fields, ", "))
	}
	return b.String()
}

// Is lets callers test for ErrMissingEnv.
func (e *MissingEnvError) Is(target error) bool { return target == ErrMissingEnv }

// ErrBadReference is wrapped by the error CheckReferences and Expand return
// for text whose ${VAR} references are malformed.
var ErrBadReference = errors.New("malformed environment reference")

// CheckReferences checks the syntax of environment references in s
// without reading the environment: ${NAME} with NAME a variable name, and
// $$ for a literal '$'. Any other '$' is an error, so that a mistyped
// $TOKEN is caught instead of being sent as is.
func CheckReferences(s string) error {
	_, err := expand(s, func(string) (string, bool) { return "", true })
	return err
}

// Expand replaces each ${NAME} in s with the value lookup gives and each $$
// with '$'. Variables that are not set or are empty make a *MissingEnvError
// naming them; malformed references an error wrapping ErrBadReference.
func Expand(s string, lookup func(string) (string, bool)) (string, error) {
	var missing []string
	out, err := expand(s, func(name string) (string, bool) {
		v, ok := lookup(name)
		if !ok || v == "" {
			if !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
			return "", false
		}
		return v, true
	})
	if err != nil {
		return "", err
	}
	if len(missing) > 0 {
		return "", &MissingEnvError{Vars: missing}
	}
	return out, nil
}

// expand does the work of Expand; lookup reports false for a variable it
// cannot resolve, which expand leaves to its caller to report.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		rest := s[i+1:]
		switch {
		case strings.HasPrefix(rest, "$"):
			b.WriteByte('$')
			i++
		case strings.HasPrefix(rest, "{"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return "", fmt.Errorf("%w: %q: ${ without a closing }", ErrBadReference, s)
			}
			name := rest[1:end]
			if !envNamePattern.MatchString(name) {
				return "", fmt.Errorf("%w: %q: ${%s} does not name an environment variable", ErrBadReference, s, name)
			}
			v, _ := lookup(name)
			b.WriteString(v)
			i += 1 + end
		default:
			return "", fmt.Errorf("%w: %q: write ${NAME} to use a variable, $$ for a literal $", ErrBadReference, s)
		}
	}
	return b.String(), nil
}

// expandConfig returns c with every reference in Env, URL and Headers
// replaced. Missing variables make one *MissingEnvError naming each of them
// and where it is used.
func expandConfig(c Config, lookup func(string) (string, bool)) (Config, error) {
	missing := &MissingEnvError{Server: c.Name}
	var bad []error
	one := func(field, v string) string {
		out, err := Expand(v, lookup)
		var me *MissingEnvError
		switch {
		case errors.As(err, &me):
			for _, name := range me.Vars {
				if !slices.Contains(missing.Vars, name) {
					missing.Vars = append(missing.Vars, name)
				}
			}
			missing.Fields = append(missing.Fields, field)
		case err != nil:
			bad = append(bad, fmt.Errorf("%s: %w", field, err))
		}
		return out
	}
	out := c
	if c.Env != nil {
		out.Env = make(map[string]string, len(c.Env))
		for _, k := range sortedKeys(c.Env) {
			out.Env[k] = one("env."+k, c.Env[k])
		}
	}
	out.URL = one("url", c.URL)
	if c.Headers != nil {
		out.Headers = make(map[string]string, len(c.Headers))
		for _, k := range sortedKeys(c.Headers) {
			out.Headers[k] = one("headers."+k, c.Headers[k])
		}
	}
	if len(bad) > 0 {
		return Config{}, fmt.Errorf("MCP server %s: %w", c.Name, errors.Join(bad...))
	}
	if len(missing.Vars) > 0 {
		return Config{}, missing
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
