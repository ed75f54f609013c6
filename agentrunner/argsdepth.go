package agentrunner

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MaxArgsDepth is how deeply a call's argument JSON may nest arrays and
// objects: {"a":1} is one level, {"a":[1]} two. Deeper arguments are refused
// at every way in (the HTTP API, the runner, MCP tools), because what reads
// them (pretty-printing, schema validation, CEL) costs more with every level.
const MaxArgsDepth = 64

// ErrArgsTooDeep is wrapped by the errors of CheckArgsDepth.
var ErrArgsTooDeep = fmt.Errorf("arguments are nested deeper than %d levels", MaxArgsDepth)

// CheckArgsDepth returns an error wrapping ErrArgsTooDeep if args nest
// arrays and objects deeper than MaxArgsDepth. args is a JSON value or a
// JSON string holding one (Pydantic AI's string form), which is checked
// inside. It scans the bytes once and decodes nothing but the string form,
// so it costs time linear in the input and constant memory beyond that
// string; it does not check that args are valid JSON.
func CheckArgsDepth(args json.RawMessage) error {
	args = bytes.TrimSpace(args)
	if len(args) > 0 && args[0] == '"' {
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			return nil // not a string: validity is for the caller to check
		}
		return checkDepth([]byte(s))
	}
	return checkDepth(args)
}

// checkDepth scans JSON text for brackets outside strings.
func checkDepth(b []byte) error {
	depth := 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > MaxArgsDepth {
				return ErrArgsTooDeep
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

// CheckArgs returns an error wrapping ErrArgsTooDeep, naming the call, if
// its arguments nest deeper than MaxArgsDepth.
func (p ToolCallPart) CheckArgs() error {
	if err := CheckArgsDepth(p.Args); err != nil {
		return fmt.Errorf("tool call %s: %w", p.ToolCallID, err)
	}
	return nil
}

// refuseTooDeep splits requests into the calls whose arguments are too
// deep, answered here (approvals denied, other calls failed, each with the
// reason), and the rest.
func refuseTooDeep(requests DeferredToolRequests) (*DeferredToolResults, DeferredToolRequests) {
	var refused *DeferredToolResults
	keep := func(calls []ToolCallPart, deny func(id, msg string)) []ToolCallPart {
		var out []ToolCallPart
		for _, c := range calls {
			err := c.CheckArgs()
			if err == nil {
				out = append(out, c)
				continue
			}
			if refused == nil {
				refused = NewDeferredToolResults()
			}
			deny(c.ToolCallID, "The tool call was refused: its "+ErrArgsTooDeep.Error()+".")
		}
		return out
	}
	rest := requests.clone()
	rest.Approvals = keep(requests.Approvals, func(id, msg string) { refused.Approvals[id] = Deny(msg) })
	rest.Calls = keep(requests.Calls, func(id, msg string) { refused.Calls[id] = Fail(msg) })
	if refused == nil {
		return nil, requests
	}
	for id := range refused.Approvals {
		delete(rest.Metadata, id)
	}
	for id := range refused.Calls {
		delete(rest.Metadata, id)
	}
	return refused, rest
}
