package approval

// MetaPermissionPrompt is the metadata key (Request.Requests.Metadata[id])
// of a call that a coding agent asks permission for through the MCP
// gateway's approval_prompt tool: its value names the agent ("Claude
// Code"), and the call's tool_name and args are the agent's own tool and
// input (Bash, {"command": …}). Cards lead with what the tool will do.
const MetaPermissionPrompt = "slackbot_permission_prompt"
