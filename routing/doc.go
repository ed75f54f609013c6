// Package routing reads the routing file: which route an agent's tool call
// follows, which Slack channel its approval request is posted to, who may
// decide it and how many must, how long it waits, and which calls a CEL
// policy (auto_approve, auto_deny) decides without a person; plus the MCP
// servers whose tools the agent is offered.
//
// The file is strict YAML: ParseRoutes walks the syntax tree itself so that
// every unknown field, wrong type and invalid value is reported at once,
// each at its own line, in one *RoutesError. A Routes value is read-only
// once parsed and safe for concurrent use.
//
// The package knows neither Slack's API nor Redis: Slack ids are checked
// for their shape only, and usergroup membership is asked of a
// UsergroupMembers function the caller provides.
package routing
