package approval

// MayCall returns nil if an API client restricted to the routes allowed
// (nil: every route) may call tool through a door that starts no run in a
// channel (the MCP gateway), read-only tools included: the route the call
// takes, as Open routes it, must be one of allowed. Otherwise it returns
// EFORBIDDEN, naming the route the call would take or saying none matches.
// A client restricted to routes reaches no tool outside them, even one
// that needs no approval and would run at once with slackbot's own
// credentials.
func (s *Service) MayCall(tool string, allowed []string) error {
	if allowed == nil {
		return nil
	}
	route := s.routes.Match(tool, "")
	switch {
	case route == nil:
		return Errorf(EFORBIDDEN, "no route matches %s, and this API key may use only the routes it names", tool)
	case !routeAllowed(allowed, route.Name):
		return Errorf(EFORBIDDEN, "%s goes to route %q, which this API key may not use", tool, route.Name)
	}
	return nil
}

// Outcomes of an UpstreamCall.
const (
	// UpstreamOK: the upstream server answered with a result.
	UpstreamOK = "ok"
	// UpstreamToolError: it answered with a tool error (isError).
	UpstreamToolError = "tool_error"
	// UpstreamFailed: no answer came (the server out of reach, a timeout,
	// a protocol error).
	UpstreamFailed = "failed"
)

// UpstreamCall is one call the MCP gateway made to an upstream MCP server
// on an API client's behalf, with slackbot's credentials for that server,
// for the audit stream: read-only calls (no request) and approved ones.
type UpstreamCall struct {
	// Client is the API key's name.
	Client string
	// Tool is the tool as offered, "<server>__<tool>".
	Tool string
	// ArgsSHA256 is the receipt's args_sha256 of the arguments sent (see
	// receipt.ArgsSHA256); empty when they have no canonical form.
	ArgsSHA256 string
	// Args are the arguments sent.
	Args string
	// Token and CallID name the approved call; empty for a read-only one.
	Token, CallID string
	// Outcome is UpstreamOK, UpstreamToolError or UpstreamFailed.
	Outcome string
	// Detail is the start of the result's text, or why the call failed.
	Detail string
}
