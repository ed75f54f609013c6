package slackfake

import (
	"slices"
	"time"
)

// Option configures a Server.
type Option func(*Server)

// WithToken sets the only bot token the server accepts.
func WithToken(token string) Option { return func(s *Server) { s.token = token } }

// WithTeam sets the workspace's team id, name and domain.
func WithTeam(id, name, domain string) Option {
	return func(s *Server) { s.team = Team{ID: id, Name: name, Domain: domain} }
}

// WithBot sets the app's bot user id and name, its bot id and app id.
func WithBot(userID, name, botID, appID string) Option {
	return func(s *Server) {
		delete(s.users, s.botUID)
		s.userOrder = slices.DeleteFunc(s.userOrder, func(id string) bool { return id == s.botUID })
		s.botUID, s.botID, s.appID = userID, botID, appID
		s.addUser(User{ID: userID, Name: name, RealName: name, IsBot: true})
	}
}

// WithUsers adds people to the workspace.
func WithUsers(users ...User) Option {
	return func(s *Server) {
		for _, u := range users {
			s.addUser(u)
		}
	}
}

// WithUsergroups adds usergroups to the workspace.
func WithUsergroups(groups ...Usergroup) Option {
	return func(s *Server) {
		for _, g := range groups {
			s.addUsergroup(g)
		}
	}
}

// WithChannels adds channels to the workspace.
func WithChannels(channels ...Channel) Option {
	return func(s *Server) {
		for _, c := range channels {
			s.addChannel(c)
		}
	}
}

// WithClock sets the clock used for message timestamps, trigger expiry and
// rate-limit windows, so tests control time instead of sleeping.
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// StrictChannels refuses every channel not added with WithChannels or
// AddChannel. By default a well-formed channel id (C…, G…, D…) is created
// on first use, and only names like "#general" are refused.
func StrictChannels() Option { return func(s *Server) { s.strict = true } }

// WithDemoWorkspace adds the people and channels of slackbot's demo:
// U0ALICE and U0BOB approve, U0CAROL asks; usergroup S0APPROVERS holds
// Alice and Bob; channels C0APPROVALS, C0GENERAL and C0SUPPORT.
func WithDemoWorkspace() Option {
	return func(s *Server) {
		WithUsers(
			User{ID: "U0ALICE", Name: "alice", RealName: "Alice Approver", DisplayName: "Alice"},
			User{ID: "U0BOB", Name: "bob", RealName: "Bob Approver", DisplayName: "Bob"},
			User{ID: "U0CAROL", Name: "carol", RealName: "Carol Requester", DisplayName: "Carol"},
		)(s)
		WithUsergroups(Usergroup{ID: "S0APPROVERS", Handle: "approvers", Name: "Approvers", Members: []string{"U0ALICE", "U0BOB"}})(s)
		WithChannels(
			Channel{ID: "C0APPROVALS", Name: "approvals"},
			Channel{ID: "C0GENERAL", Name: "general"},
			Channel{ID: "C0SUPPORT", Name: "support"},
		)(s)
	}
}
