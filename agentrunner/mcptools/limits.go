package mcptools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Default limits of what a server may send (Limits' zero values).
//
// A message of 4 MiB holds a tools/list fifty times the size of large real
// servers' (GitHub's, some hundred tools, is about 100 KB) and a tool
// result of about a million tokens, more than a model's context; parsing
// one costs tens of MB at most. A thousand tools is more than any model
// takes in one request (OpenAI's limit is 128). Real descriptions run to a
// few KiB and real schemas to a few tens; a longer description is cut
// (prose for the model, still useful in part), a larger schema refused
// (half a schema is a different schema).
const (
	DefaultMaxResponse    = 4 << 20
	DefaultMaxTools       = 1000
	DefaultMaxDescription = 8 << 10
	DefaultMaxSchema      = 64 << 10
)

// Limits bounds what one MCP server may send, so that a hostile or broken
// server costs bounded memory, once per connection, and nothing of it
// reaches the model or the gateway's clients. Zero fields take the
// defaults above. Beyond Response, Tools or Schema the server is cut off:
// unavailable, its tools withdrawn, a log line naming the limit; it is
// tried again with backoff, and comes back once it keeps within them.
type Limits struct {
	// Response bounds one message from the server, in bytes: a response
	// body of a streamable-HTTP server (one server-sent event when it
	// streams), one JSON-RPC message over stdio. It is enforced while the
	// message is read, so no more than this is ever buffered. It bounds
	// the tools a listing keeps too, over all its pages, so that what is
	// served again to every gateway client is no larger.
	Response int64
	// Tools bounds how many tools the server may list.
	Tools int
	// Description bounds a tool's description, in bytes; a longer one is
	// cut to it (on a character boundary, ending in "…") and logged.
	Description int
	// Schema bounds a tool's input schema, and its output schema, each in
	// bytes of JSON.
	Schema int
}

// Names of the limits, as the routing file's mcp_servers entries spell
// them and LimitError.Limit and the log lines name them.
const (
	LimitResponse    = "limits.response"
	LimitTools       = "limits.tools"
	LimitDescription = "limits.description"
	LimitSchema      = "limits.schema"
)

// withDefaults returns l with its zero fields set to the defaults.
func (l Limits) withDefaults() Limits {
	if l.Response <= 0 {
		l.Response = DefaultMaxResponse
	}
	if l.Tools <= 0 {
		l.Tools = DefaultMaxTools
	}
	if l.Description <= 0 {
		l.Description = DefaultMaxDescription
	}
	if l.Schema <= 0 {
		l.Schema = DefaultMaxSchema
	}
	return l
}

// validate adds a problem for each negative limit.
func (l Limits) validate(add func(field, format string, args ...any)) {
	for _, f := range []struct {
		name string
		v    int64
	}{{LimitResponse, l.Response}, {LimitTools, int64(l.Tools)}, {LimitDescription, int64(l.Description)}, {LimitSchema, int64(l.Schema)}} {
		if f.v < 0 {
			add(f.name, "must be more than zero, got %d", f.v)
		}
	}
}

// ErrLimit is matched (errors.Is) by every *LimitError.
var ErrLimit = errors.New("MCP server over its limits")

// LimitError says a server sent more than one of its Limits allows. It
// comes wrapped in the *UnavailableError of the server it cut off.
type LimitError struct {
	// Limit is LimitResponse, LimitTools or LimitSchema.
	Limit string
	// Max is the limit's value: bytes, or tools.
	Max int64
	// Tool names the server's tool whose schema is too large.
	Tool string
}

// Error says what went over which limit.
func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitTools:
		return fmt.Sprintf("it lists more than %s (%d) tools", e.Limit, e.Max)
	case LimitSchema:
		return fmt.Sprintf("the schema of its tool %q is larger than %s (%d bytes)", e.Tool, e.Limit, e.Max)
	}
	return fmt.Sprintf("it sent more than %s (%d bytes) in one message, or in one listing of its tools", e.Limit, e.Max)
}

// Is lets callers test for ErrLimit.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// guard enforces one connection's limit on the bytes of each message read
// from the server, and keeps the first breach: the SDK passes a reader's
// error on only as text (or, for an event stream, not at all), so the
// breach is how a caller learns which limit the server broke. A breach
// also cuts the connection off (stop), so that nothing waits for a
// message that will never be read.
type guard struct {
	max int64

	mu     sync.Mutex
	breach *LimitError
	stop   func()
}

// exceeded records a breach of the response limit and cuts the
// connection off; it returns the breach.
func (g *guard) exceeded() *LimitError {
	g.mu.Lock()
	first := g.breach == nil
	if first {
		g.breach = &LimitError{Limit: LimitResponse, Max: g.max}
	}
	b, stop := g.breach, g.stop
	g.mu.Unlock()
	if first && stop != nil {
		go stop()
	}
	return b
}

// tripped returns the breach, or nil.
func (g *guard) tripped() *LimitError {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.breach
}

// onBreach sets how the connection is cut off: at once if a breach came
// first.
func (g *guard) onBreach(stop func()) {
	g.mu.Lock()
	g.stop = stop
	b := g.breach
	g.mu.Unlock()
	if b != nil {
		go stop()
	}
}

// reader returns r read through the limit, each message as split frames
// it (nil: all of r is one message).
func (g *guard) reader(r io.Reader, split framer) io.Reader {
	return &limitedReader{r: r, g: g, split: split}
}

// framer finds where messages end in a byte stream.
type framer interface {
	// end reports whether b, the next byte, ends a message.
	end(b byte) bool
}

// limitedReader fails, with the guard's breach, as soon as a message
// grows past the guard's limit: io.LimitReader's bound, as an error.
type limitedReader struct {
	r     io.Reader
	g     *guard
	split framer
	n     int64 // bytes of the current message read
	err   error
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	if l.split == nil {
		if l.n += int64(n); l.n > l.g.max {
			l.err = l.g.exceeded()
			return n - int(l.n-l.g.max), l.err
		}
		return n, err
	}
	for i, b := range p[:n] {
		if l.n++; l.n > l.g.max {
			l.err = l.g.exceeded()
			return i, l.err
		}
		if l.split.end(b) {
			l.n = 0
		}
	}
	return n, err
}

// sseEvents frames a server-sent event stream as the SDK reads it: lines
// end with '\n', and an empty line (or "\r") ends an event.
type sseEvents struct {
	line  int  // bytes of the current line before its '\n'
	first byte // its first byte
}

func (s *sseEvents) end(b byte) bool {
	if b != '\n' {
		if s.line == 0 {
			s.first = b
		}
		s.line++
		return false
	}
	blank := s.line == 0 || s.line == 1 && s.first == '\r'
	s.line = 0
	return blank
}

// jsonValues frames a stream of JSON values (stdio's newline-delimited
// messages, pretty-printed or not): a value ends where its outermost
// object or array closes; a newline between values ends what came before
// it, so stray text is bounded too.
type jsonValues struct {
	depth    int
	inString bool
	escaped  bool
}

func (j *jsonValues) end(b byte) bool {
	switch {
	case j.inString:
		switch {
		case j.escaped:
			j.escaped = false
		case b == '\\':
			j.escaped = true
		case b == '"':
			j.inString = false
		}
	case b == '"':
		j.inString = true
	case b == '{' || b == '[':
		j.depth++
	case b == '}' || b == ']':
		j.depth = max(j.depth-1, 0)
		return j.depth == 0
	case b == '\n':
		return j.depth == 0
	}
	return false
}

// limitTransport reads every response of a streamable-HTTP server through
// the guard: a server-sent event stream event by event, any other body
// (a JSON-RPC response, an error page) as one message.
type limitTransport struct {
	base http.RoundTripper
	g    *guard
}

func (t *limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	var split framer
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		split = &sseEvents{}
	}
	resp.Body = limitedBody{Reader: t.g.reader(resp.Body, split), Closer: resp.Body}
	return resp, nil
}

type limitedBody struct {
	io.Reader
	io.Closer
}

// overLimit is the error of a server over one of its limits.
func (c *Client) overLimit(e *LimitError) error {
	return &UnavailableError{Server: c.cfg.Name, Transport: c.transport, Err: e}
}

// bound applies the limits on one listed tool and returns about how many
// bytes it keeps: a schema too large refuses the server's list; a
// description too long is cut, and logged once per connection.
func (c *Client) bound(t *mcp.Tool) (int, error) {
	size := len(t.Name) + len(t.Title)
	if t.Annotations != nil {
		size += len(t.Annotations.Title)
	}
	for _, schema := range []any{t.InputSchema, t.OutputSchema} {
		// Marshalled within limits.response, which bounds what it costs.
		b, err := json.Marshal(schema)
		if err == nil && len(b) > c.limits.Schema {
			return 0, c.overLimit(&LimitError{Limit: LimitSchema, Max: int64(c.limits.Schema), Tool: t.Name})
		}
		size += len(b)
	}
	if n := len(t.Description); n > c.limits.Description {
		t.Description = cut(t.Description, c.limits.Description)
		c.cutMu.Lock()
		first := c.cut[t.Name] != n
		if c.cut == nil {
			c.cut = map[string]int{}
		}
		c.cut[t.Name] = n
		c.cutMu.Unlock()
		if first {
			c.logger.Warn("MCP server: a tool's description is longer than its limit; cut",
				"tool", t.Name, "bytes", n, "limit", LimitDescription, "max", c.limits.Description)
		}
	}
	return size + len(t.Description), nil
}

// cut shortens s to at most n bytes, on a UTF-8 boundary, ending in "…".
func cut(s string, n int) string {
	const mark = "…"
	if n < len(mark) {
		return ""
	}
	k := n - len(mark)
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	return s[:k] + mark
}
