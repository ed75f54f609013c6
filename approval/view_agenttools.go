package approval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/slackapprove/slackbot/agentrunner"
)

// The coding agents' own tools slackbot knows: how each one's change is
// shown (BuildChange), its JSON Schema (AgentSchema) and which of its
// arguments a person edits on the card (EditFields). The server knows
// them by agent and tool name rather than taking a schema from the hook:
// the schema is the same for every hook of a version, a hook's schema
// would only be the client's word again (ArgsSchemaKey, which a known
// tool never lets a client loosen), and the card's fields and its schema
// must read the same members.
//
// Shapes, and where they come from:
//   - Claude Code 2.1.332 (@anthropic-ai/claude-code sdk-tools.d.ts:
//     BashInput, FileEditInput, FileWriteInput; MultiEdit from the
//     binary's tool list, for versions that still send it): Bash
//     {command, description?, timeout?, run_in_background?,
//     dangerouslyDisableSandbox?}, Edit {file_path, old_string,
//     new_string, replace_all?}, MultiEdit {file_path, edits: [{old_string,
//     new_string, replace_all?}]}, Write {file_path, content}.
//   - Codex 0.171.0: its model calls shell, exec_command, local_shell
//     and apply_patch, but its hooks see them under their hook names
//     (codex-rs core/src/tools/hook_names.rs, HookToolName): every shell
//     tool is "Bash" with {command: a string, description?}, and
//     apply_patch is "apply_patch" with the patch in {command} (the
//     ApplyPatchHandler's pre_tool_use_payload and the apply-patch
//     runtime's permission_request_payload).
//   - Gemini CLI 0.61.0 (@google/gemini-cli bundle, tool definitions):
//     run_shell_command {command, description?, dir_path?, is_background?,
//     delay_ms?, additional_permissions?}, replace {file_path,
//     instruction?, old_string, new_string, allow_multiple?}, write_file
//     {file_path, content}.
//
// Members a schema does not name are allowed (a newer version's): they
// are shown on the card (Change.Rest) and kept as they are by an edit.

// knownTool is one agent tool slackbot shows as a change.
type knownTool struct {
	change func(map[string]json.RawMessage) *Change
	// shown are the members the change shows itself; the rest is Rest.
	shown  []string
	schema string
	// fields are the members a person edits, in the form's order; an
	// entry "edits[]" stands for each edit of a MultiEdit.
	fields []string

	once sync.Once
	tool *agentrunner.Tool
	err  error
}

var (
	claudeBash = &knownTool{change: commandChange, shown: []string{"command", "description"}, fields: []string{"command"},
		schema: obj(`"command"`, `"command":{"type":"string","minLength":1},"description":{"type":"string"},"timeout":{"type":"number","minimum":0},"run_in_background":{"type":"boolean"},"dangerouslyDisableSandbox":{"type":"boolean"}`)}
	claudeEdit = &knownTool{change: editChange("replace_all"), shown: []string{"file_path", "old_string", "new_string", "replace_all"},
		fields: []string{"file_path", "old_string", "new_string"},
		schema: obj(`"file_path","old_string","new_string"`, `"file_path":{"type":"string","minLength":1},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}`)}
	claudeMultiEdit = &knownTool{change: multiEditChange, shown: []string{"file_path", "edits"}, fields: []string{"file_path", "edits[]"},
		schema: obj(`"file_path","edits"`, `"file_path":{"type":"string","minLength":1},"edits":{"type":"array","minItems":1,"items":{"type":"object","required":["old_string","new_string"],"properties":{"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}}}}`)}
	writeFile = &knownTool{change: contentChange, shown: []string{"file_path", "content"}, fields: []string{"file_path", "content"},
		schema: obj(`"file_path","content"`, `"file_path":{"type":"string","minLength":1},"content":{"type":"string"}`)}
	codexBash = &knownTool{change: commandChange, shown: []string{"command", "description"}, fields: []string{"command"},
		schema: obj(`"command"`, `"command":{"type":"string","minLength":1},"description":{"type":"string"}`)}
	// A patch Codex can apply starts with "*** Begin Patch" and ends with
	// "*** End Patch" (codex-rs apply-patch's parser).
	codexPatch = &knownTool{change: patchChange, shown: []string{"command"}, fields: []string{"command"},
		schema: obj(`"command"`, `"command":{"type":"string","pattern":"^\\s*\\*\\*\\* Begin Patch[\\s\\S]*\\*\\*\\* End Patch\\s*$"}`)}
	geminiShell = &knownTool{change: commandChange, shown: []string{"command", "description"}, fields: []string{"command"},
		schema: obj(`"command"`, `"command":{"type":"string","minLength":1},"description":{"type":"string"},"dir_path":{"type":"string"},"is_background":{"type":"boolean"},"delay_ms":{"type":"integer","minimum":0},"additional_permissions":{"type":"object"}`)}
	geminiReplace = &knownTool{change: editChange("allow_multiple"), shown: []string{"file_path", "old_string", "new_string", "allow_multiple"},
		fields: []string{"file_path", "old_string", "new_string"},
		schema: obj(`"file_path","instruction","old_string","new_string"`, `"file_path":{"type":"string","minLength":1},"instruction":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"allow_multiple":{"type":"boolean"}`)}
)

// agentTools are the known tools by agent and tool name.
var agentTools = map[string]map[string]*knownTool{
	AgentClaudeCode: {"Bash": claudeBash, "Edit": claudeEdit, "MultiEdit": claudeMultiEdit, "Write": writeFile},
	AgentCodex:      {"Bash": codexBash, "apply_patch": codexPatch},
	AgentGemini:     {"run_shell_command": geminiShell, "replace": geminiReplace, "write_file": writeFile},
}

// obj is an object schema with required members and properties.
func obj(required, properties string) string {
	return `{"type":"object","required":[` + required + `],"properties":{` + properties + `}}`
}

func agentTool(agent, tool string) *knownTool { return agentTools[agent][tool] }

// AgentSchema returns the built-in tool that checks the arguments of
// agent's tool (its JSON Schema), or nil when slackbot knows none.
func AgentSchema(agent, tool string) *agentrunner.Tool {
	t := agentTool(agent, tool)
	if t == nil {
		return nil
	}
	t.once.Do(func() {
		t.tool, t.err = agentrunner.NewRawTool(tool, "", json.RawMessage(t.schema), nil)
	})
	if t.err != nil {
		panic(fmt.Sprintf("approval: built-in schema of %s %s: %v", agent, tool, t.err)) // a bug, caught by the tests
	}
	return t.tool
}

// EditField is one argument a person edits on an agent tool's card: a
// string member of the arguments (Key: its name, or "edits.<i>.<name>"
// inside a MultiEdit), its Label and current Value.
type EditField struct {
	Key       string
	Label     string
	Value     string
	Multiline bool
}

// EditFields are the fields a person edits of agent's tool called with
// args, in order; nil when the tool is not one slackbot knows or args are
// not as it takes them. The other members are kept as they are.
func EditFields(agent, tool string, args json.RawMessage) []EditField {
	t := agentTool(agent, tool)
	if t == nil {
		return nil
	}
	in, ok := decodeObject(args)
	if !ok || t.change(in) == nil {
		return nil
	}
	var out []EditField
	for _, f := range t.fields {
		if f != "edits[]" {
			v, _ := str(in, f)
			out = append(out, EditField{Key: f, Label: fieldLabel(f), Value: v, Multiline: f != "file_path"})
			continue
		}
		var edits []map[string]json.RawMessage
		_ = json.Unmarshal(in["edits"], &edits) // multiEditChange read them
		for i, e := range edits[:min(len(edits), maxEdits)] {
			for _, m := range []string{"old_string", "new_string"} {
				v, _ := str(e, m)
				out = append(out, EditField{Key: "edits." + strconv.Itoa(i) + "." + m,
					Label: fmt.Sprintf("Edit %d: %s", i+1, fieldLabel(m)), Value: v, Multiline: true})
			}
		}
	}
	return out
}

func fieldLabel(member string) string {
	switch member {
	case "command":
		return "Command"
	case "file_path":
		return "File"
	case "old_string":
		return "Text to replace"
	case "new_string":
		return "Replace it with"
	case "content":
		return "Content"
	}
	return member
}

// EditedArgs returns args with the string members named by values' keys
// (EditFields' Keys) set to values'. A value that differs from the
// current one only in white space at its end keeps the current one: a
// form's input may trim it, and a person who left the field alone meant
// no change. A key that names no string member is refused (EINVALID).
// Every other member stays as it came, in its place; the result is
// compact JSON, checked by CheckEdit like any edit.
func EditedArgs(args json.RawMessage, values map[string]string) (json.RawMessage, error) {
	if err := agentrunner.CheckArgs(args); err != nil {
		return nil, Errorf(EINVALID, "The arguments could be read two ways, so they cannot be edited: %s.", truncate(err.Error(), 500))
	}
	top := map[string]string{}
	nested := map[string]map[int]map[string]string{} // "edits" → index → member → value
	for key, v := range values {
		parts := strings.Split(key, ".")
		switch len(parts) {
		case 1:
			top[key] = v
		case 3:
			i, err := strconv.Atoi(parts[1])
			if err != nil || i < 0 || strconv.Itoa(i) != parts[1] {
				return nil, Errorf(EINVALID, "The arguments have no field %q to edit.", key)
			}
			if nested[parts[0]] == nil {
				nested[parts[0]] = map[int]map[string]string{}
			}
			if nested[parts[0]][i] == nil {
				nested[parts[0]][i] = map[string]string{}
			}
			nested[parts[0]][i][parts[2]] = v
		default:
			return nil, Errorf(EINVALID, "The arguments have no field %q to edit.", key)
		}
	}
	out, err := setMembers(args, top, nested)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, out); err != nil {
		return nil, Errorf(EINVALID, "The edited arguments are not JSON: %v", err)
	}
	return b.Bytes(), nil
}

// setMembers rewrites the object obj member by member, in order: the
// members of set get their new text (they must be strings), the arrays
// named in nested have the objects at its indexes rewritten alike.
func setMembers(obj json.RawMessage, set map[string]string, nested map[string]map[int]map[string]string) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, Errorf(EINVALID, "The arguments must be a JSON object.")
	}
	var b bytes.Buffer
	b.WriteByte('{')
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		var raw json.RawMessage
		if err != nil || !isKey || dec.Decode(&raw) != nil {
			return nil, Errorf(EINVALID, "The arguments must be a JSON object.")
		}
		seen[key] = true
		if v, ok := set[key]; ok {
			var cur string
			if json.Unmarshal(raw, &cur) != nil {
				return nil, Errorf(EINVALID, "The field %q is not text.", key)
			}
			if strings.TrimRight(v, " \t\r\n") != strings.TrimRight(cur, " \t\r\n") {
				raw = marshalText(v)
			}
		}
		if idx, ok := nested[key]; ok {
			if raw, err = setElements(key, raw, idx); err != nil {
				return nil, err
			}
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(marshalText(key))
		b.WriteByte(':')
		b.Write(raw)
	}
	for key := range set {
		if !seen[key] {
			return nil, Errorf(EINVALID, "The arguments have no field %q to edit.", key)
		}
	}
	for key := range nested {
		if !seen[key] {
			return nil, Errorf(EINVALID, "The arguments have no field %q to edit.", key)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// setElements rewrites the objects at the indexes of idx in the array arr
// (the member name of the arguments).
func setElements(name string, arr json.RawMessage, idx map[int]map[string]string) (json.RawMessage, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(arr, &elems); err != nil {
		return nil, Errorf(EINVALID, "The field %q is not a list.", name)
	}
	for i, set := range idx {
		if i >= len(elems) {
			return nil, Errorf(EINVALID, "The arguments have no item %d in %q to edit.", i, name)
		}
		e, err := setMembers(elems[i], set, nil)
		if err != nil {
			return nil, err
		}
		elems[i] = e
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// marshalText is s as a JSON string, with <, > and & as they are.
func marshalText(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSpace(b.Bytes())
}

// agentEditable reports whether call id of r is a coding agent's tool
// whose schema slackbot knows, so an approver may edit it on its card.
func agentEditable(r *Request, id string) bool {
	call, ok := r.Requests.Call(id)
	return ok && AgentSchema(CallAgent(r, id), call.ToolName) != nil
}

// EditAgentArgs is EditedArgs for agent's tool, limited to its EditFields:
// a form that names any other member is refused (EINVALID), whoever sent
// it.
func EditAgentArgs(agent, tool string, args json.RawMessage, values map[string]string) (json.RawMessage, error) {
	offered := map[string]bool{}
	for _, f := range EditFields(agent, tool, args) {
		offered[f.Key] = true
	}
	for key := range values {
		if !offered[key] {
			return nil, Errorf(EINVALID, "The field %q cannot be edited here.", key)
		}
	}
	return EditedArgs(args, values)
}
