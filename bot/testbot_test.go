package bot

import (
	"log/slog"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/routing"
)

// testConfig is what the tests of package bot build a Bot from: the Slack
// side, and the store and routes of the approval.Service it decides
// through, wired as cmd/slackbot wires them.
type testConfig struct {
	Slack        SlackAPI
	Approvals    approval.Store
	Routes       *routing.Routes
	Runner       *agentrunner.Runner
	Usergroups   *Usergroups
	TeamID       string
	EnterpriseID string
	Log          *slog.Logger
	Retry        Retry
	Now          func() time.Time
	Metrics      Metrics
	AckBudget    time.Duration
	Passkeys     Passkeys
	PublicURL    string
}

// newTestBot builds Cards, Usergroups and a Service over tc's store, and
// the Bot over them.
func newTestBot(tc testConfig) *Bot {
	var tools approval.Tools
	if tc.Runner != nil {
		tools = tc.Runner
	}
	store := tc.Approvals
	if store == nil {
		store = stubStore{}
	}
	cards := NewCards(CardsConfig{Slack: tc.Slack, Routes: tc.Routes, Tools: tools, Retry: tc.Retry, Metrics: tc.Metrics, Log: tc.Log})
	groups := tc.Usergroups
	if groups == nil {
		groups = &Usergroups{Slack: tc.Slack, Now: tc.Now}
	}
	var metrics approval.Metrics
	if tc.Metrics != nil {
		metrics = tc.Metrics
	}
	svc := approval.New(approval.Config{
		Store: store, Poster: cards, Directory: groups, Routes: tc.Routes, Tools: tools,
		Metrics: metrics, Log: tc.Log, Now: tc.Now,
	})
	return New(Config{
		Slack: tc.Slack, Service: svc, Cards: cards, Usergroups: groups,
		TeamID: tc.TeamID, EnterpriseID: tc.EnterpriseID, Log: tc.Log, Retry: tc.Retry, Now: tc.Now,
		Metrics: tc.Metrics, AckBudget: tc.AckBudget, Passkeys: tc.Passkeys, PublicURL: tc.PublicURL,
	})
}
