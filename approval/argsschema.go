package approval

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/slackapprove/slackbot/agentrunner"
)

// ArgsSchemaKey is the member of a call's request metadata
// (DeferredToolRequests.metadata[tool_call_id]) in which an API client
// sends the JSON Schema of the arguments of a tool slackbot does not know
// (the tool's parameters, as the client's framework declares them). With
// it, the call's card offers Edit, and an edit is checked against it as
// against a known tool's schema; without it, only /v1's override_args can
// change an API call's arguments. A tool slackbot knows keeps its own
// schema: a client cannot loosen it.
const ArgsSchemaKey = "slackbot_args_schema"

// maxArgsSchemaBytes bounds the schema of one call, well inside /v1's body limit.
const maxArgsSchemaBytes = 64 << 10

// CheckArgsSchema checks the schema a client sent in md, a call's request
// metadata, for tool: none is fine; else it must be a JSON object of at
// most 64 KiB, nested no deeper than agentrunner.MaxArgsDepth, that
// compiles as a JSON Schema referring only to itself. It returns an EINVALID
// *Error saying why not.
func CheckArgsSchema(tool string, md map[string]any) error {
	_, _, err := argsSchemaTool(tool, md)
	return err
}

// argsSchemaTool returns a tool validating arguments against the schema
// a client sent in md; ok is false when md holds none.
func argsSchemaTool(name string, md map[string]any) (tool *agentrunner.Tool, ok bool, err error) {
	v, ok := md[ArgsSchemaKey]
	if !ok {
		return nil, false, nil
	}
	if _, isObject := v.(map[string]any); !isObject {
		return nil, true, Errorf(EINVALID, "%s must be a JSON Schema object", ArgsSchemaKey)
	}
	schema, err := json.Marshal(v)
	switch {
	case err != nil:
		return nil, true, Errorf(EINVALID, "%s: %v", ArgsSchemaKey, err)
	case len(schema) > maxArgsSchemaBytes:
		return nil, true, Errorf(EINVALID, "%s is longer than %d bytes", ArgsSchemaKey, maxArgsSchemaBytes)
	case errors.Is(agentrunner.CheckArgs(schema), agentrunner.ErrArgsTooDeep):
		// Only the depth: the schema is encoded here from what Go decoded,
		// so it is read one way already.
		return nil, true, Errorf(EINVALID, "%s is nested deeper than %d levels", ArgsSchemaKey, agentrunner.MaxArgsDepth)
	}
	tool, err = agentrunner.NewRawTool(name, "", schema, nil)
	if err != nil {
		return nil, true, Errorf(EINVALID, "%s is not a JSON Schema slackbot can use: %s", ArgsSchemaKey,
			truncate(strings.TrimPrefix(err.Error(), "tool "+name+": schema: "), 500))
	}
	return tool, true, nil
}

// Editable reports whether an approver may edit the arguments of call id
// of r (an approval) on its card: tools (slackbot's own, nil for none)
// knows the tool, or the request carries its schema. Either way, the edit
// form's problems are the schema's, shown before anything runs.
func Editable(tools Tools, r *Request, id string) bool {
	call, ok := r.Requests.Call(id)
	if !ok {
		return false
	}
	if tools != nil {
		if _, known := tools.Tool(call.ToolName); known {
			return true
		}
	}
	_, has := r.Requests.Metadata[id][ArgsSchemaKey]
	return has
}
