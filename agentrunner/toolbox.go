package agentrunner

import (
	"fmt"
	"maps"
	"slices"
)

// Toolbox is an agent's tools: those registered up front, in order, then
// those of its tool sources (MCP servers), whose tools may change while
// it lives. A Runner runs with one; whoever shows pending calls to people
// (their confirmation texts) or checks edited arguments (their schemas)
// needs the same one, and can be built before the Runner, with no cycle
// between them. A Toolbox is safe for concurrent use.
type Toolbox struct {
	tools   []*Tool
	byName  map[string]*Tool
	sources []ToolSource
}

// NewToolbox returns a toolbox of tools and sources. Tool names must be
// unique; a tool of a source whose name is already taken (by tools or an
// earlier source) is left out.
func NewToolbox(tools []*Tool, sources ...ToolSource) (*Toolbox, error) {
	b := &Toolbox{byName: map[string]*Tool{}, sources: sources}
	for _, t := range tools {
		if _, dup := b.byName[t.name]; dup {
			return nil, fmt.Errorf("toolbox: two tools named %q", t.name)
		}
		b.byName[t.name] = t
		b.tools = append(b.tools, t)
	}
	return b, nil
}

// Tool returns the tool named name.
func (b *Toolbox) Tool(name string) (*Tool, bool) {
	_, byName := b.snapshot()
	t, ok := byName[name]
	return t, ok
}

// Tools returns the tools, registered ones first, then those of the
// sources.
func (b *Toolbox) Tools() []*Tool {
	tools, _ := b.snapshot()
	return slices.Clone(tools)
}

// PendingCalls returns a view of every pending call with the confirmation
// text its tool supplies, approvals first.
func (b *Toolbox) PendingCalls(req DeferredToolRequests) []PendingToolCall {
	out := make([]PendingToolCall, 0, len(req.Approvals)+len(req.Calls))
	_, byName := b.snapshot()
	for _, id := range req.IDs() {
		call, _ := req.Call(id)
		p := PendingToolCall{Call: call, Kind: req.Kind(id), Metadata: req.Metadata[id]}
		switch {
		case p.Kind == KindQuestion:
			p.Message, _ = p.Metadata[MetadataQuestion].(string)
		case byName[call.ToolName] != nil:
			p.Message = byName[call.ToolName].Confirm(call)
		default:
			p.Message = DefaultConfirmation(call)
		}
		out = append(out, p)
	}
	return out
}

// snapshot returns the tools as they are now, with an index by name.
func (b *Toolbox) snapshot() ([]*Tool, map[string]*Tool) {
	if len(b.sources) == 0 {
		return b.tools, b.byName
	}
	tools := slices.Clone(b.tools)
	byName := maps.Clone(b.byName)
	for _, src := range b.sources {
		for _, t := range src.Tools() {
			if t == nil || byName[t.name] != nil {
				continue
			}
			byName[t.name] = t
			tools = append(tools, t)
		}
	}
	return tools, byName
}
