package bot

import "github.com/slackapprove/slackbot/agentrunner"

// Origin says who started a run and where: the Slack workspace, channel,
// thread and user, or the API client when the run did not come from Slack.
// Routing matches on Channel, policies see User as requester, and the run's
// final answer is posted to Channel in ThreadTS.
type Origin struct {
	TeamID   string
	Channel  string
	ThreadTS string
	User     string
	// Client names the API client (from API_KEYS) when the run was started
	// through the HTTP API rather than from Slack.
	Client string
}

// RunOrigin returns o. It makes *Origin, and any struct that embeds one,
// an OriginCarrier, so runs can carry more deps than the origin.
func (o *Origin) RunOrigin() *Origin { return o }

// OriginCarrier is a run's Deps that knows the run's origin.
type OriginCarrier interface {
	RunOrigin() *Origin
}

// Requester is who asked, as policies and messages name them: the Slack
// user id, else "api:<client>" for an API client, else "".
func (o *Origin) Requester() string {
	switch {
	case o == nil:
		return ""
	case o.User != "":
		return o.User
	case o.Client != "":
		return "api:" + o.Client
	}
	return ""
}

// OriginFrom returns the origin of the run: its Deps when they are an
// *Origin, an Origin or an OriginCarrier. It never returns nil; a run with
// no origin gets the zero Origin (no channel, no user), which only routes
// without `when.channels` match.
func OriginFrom(rc *agentrunner.RunContext) *Origin {
	if rc == nil {
		return &Origin{}
	}
	switch d := rc.Deps.(type) {
	case *Origin:
		if d != nil {
			return d
		}
	case Origin:
		return &d
	case OriginCarrier:
		if o := d.RunOrigin(); o != nil {
			return o
		}
	}
	return &Origin{}
}
