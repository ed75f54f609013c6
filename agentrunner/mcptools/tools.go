package mcptools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/receipt"
)

// MaxToolNameLength is the longest tool name model APIs accept.
const MaxToolNameLength = 64

// toolNameSeparator joins a server's name and its tool's name. Server names
// cannot contain it (see ValidateName), so the first one ends the server's
// part and tools of different servers never share a name.
const toolNameSeparator = "__"

var modelToolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ToolName returns the name the model sees for the server's tool:
// "<server>__<tool>". Characters model APIs refuse become '_'; a name so
// changed, or longer than MaxToolNameLength, is cut short and ends in '_'
// and eight hex digits of the original name's hash, so that it stays
// unique and stable.
func ToolName(server, tool string) string {
	name := server + toolNameSeparator + tool
	if len(name) <= MaxToolNameLength && modelToolNamePattern.MatchString(name) {
		return name
	}
	var b strings.Builder
	for _, r := range tool {
		if isModelNameRune(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(tool))
	suffix := "_" + hex.EncodeToString(sum[:4])
	keep := MaxToolNameLength - len(server) - len(toolNameSeparator) - len(suffix)
	safe := b.String()
	if len(safe) > keep {
		safe = safe[:max(keep, 0)]
	}
	return server + toolNameSeparator + safe + suffix
}

func isModelNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// callFunc calls the server's tool named tool (the server's own name for
// it), with meta as the request's _meta (nil: none), and returns what the
// model should see.
type callFunc func(ctx context.Context, tool string, args json.RawMessage, meta map[string]any) (any, error)

// buildTools turns a server's tool list into agentrunner tools that call
// through call. A tool whose schema does not compile or whose name would
// repeat another's is left out and logged, so one broken tool does not
// take the server's other tools away.
func buildTools(cfg Config, list []*mcp.Tool, call callFunc, logger *slog.Logger) []*agentrunner.Tool {
	out := make([]*agentrunner.Tool, 0, len(list))
	seen := make(map[string]string, len(list))
	for _, mt := range list {
		name := ToolName(cfg.Name, mt.Name)
		if other, dup := seen[name]; dup {
			logger.Warn("MCP tool left out: its name repeats another's",
				"mcp_server", cfg.Name, "tool", mt.Name, "other", other, "name", name)
			continue
		}
		t, err := newTool(cfg, name, mt, call)
		if err != nil {
			logger.Warn("MCP tool left out", "mcp_server", cfg.Name, "tool", mt.Name, "err", err)
			continue
		}
		seen[name] = mt.Name
		out = append(out, t)
	}
	return out
}

func newTool(cfg Config, name string, mt *mcp.Tool, call callFunc) (*agentrunner.Tool, error) {
	schema := json.RawMessage(`{"type":"object"}`)
	if mt.InputSchema != nil {
		b, err := json.Marshal(mt.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		schema = b
	}
	desc := mt.Description
	if desc == "" {
		desc = mt.Title
	}
	remote := mt.Name
	display := cfg.Name + "." + remote
	opts := []agentrunner.ToolOption{
		// A person confirms the server's own tool name, not the mangled
		// one the model uses.
		agentrunner.Confirmation(func(c agentrunner.ToolCallPart) string {
			c.ToolName = display
			return agentrunner.DefaultConfirmation(c)
		}),
	}
	// The server's readOnlyHint is not trusted: the server would be
	// vouching for itself. Only the operator's read_only list lifts the
	// approval.
	if cfg.IsReadOnly(remote) {
		opts = append(opts, agentrunner.ReadOnly())
	} else {
		opts = append(opts, agentrunner.RequiresApproval())
	}
	fn := func(ctx context.Context, tc *agentrunner.ToolContext, args json.RawMessage) (any, error) {
		// The runner refuses arguments CheckArgs refuses before a tool runs;
		// checked again because these bytes go to another server as they are.
		if err := agentrunner.CheckArgs(args); err != nil {
			return nil, agentrunner.Retry("invalid arguments for " + name + ": " + err.Error())
		}
		return call(ctx, remote, args, ReceiptMeta(tc.Metadata))
	}
	return agentrunner.NewRawTool(name, desc, schema, fn, opts...)
}

// ToolError is a tool call the server answered with isError: the tool ran
// and failed. The model sees the server's message.
type ToolError struct {
	Server, Tool string
	Message      string
}

// Error returns server.tool: message.
func (e *ToolError) Error() string { return e.Server + "." + e.Tool + ": " + e.Message }

// resultValue maps a tool's result to what the model sees: the structured
// content when there is some, else the text of the content parts joined by
// newlines, non-text parts described in brackets. A result flagged isError
// becomes a *ToolError, which the runner records as a failed outcome.
func resultValue(server, tool string, res *mcp.CallToolResult) (any, error) {
	text := contentText(res.Content)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error without a message"
		}
		return nil, &ToolError{Server: server, Tool: tool, Message: text}
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: structured content: %w", server, tool, err)
		}
		return json.RawMessage(b), nil
	}
	return text, nil
}

func contentText(content []mcp.Content) string {
	parts := make([]string, 0, len(content))
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, strings.TrimSpace(fmt.Sprintf("[resource %s %s", c.URI, c.Name))+"]")
		case *mcp.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				parts = append(parts, r.Text)
			default:
				parts = append(parts, fmt.Sprintf("[resource %s %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			b, err := json.Marshal(c)
			if err == nil {
				parts = append(parts, string(b))
			}
		}
	}
	return strings.Join(parts, "\n")
}

// ReceiptMeta is the _meta of a call to an MCP server for an approved call
// whose answer's metadata md carries a receipt: {"slackbot_receipt": …},
// so that the server, which runs the tool, can verify the approval itself
// (the receipt names the tool "<server>__<tool>"); nil otherwise.
func ReceiptMeta(md map[string]any) map[string]any {
	jws := receipt.FromMetadata(md)
	if jws == "" {
		return nil
	}
	return map[string]any{receipt.MetadataKey: jws}
}
