package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// savedOrigin is how an origin is encoded where it is kept as JSON (a
// saved run, a queued turn): with the keys the previous version wrote (its
// bot.Origin had no JSON tags), so that replicas of either version read
// what the other wrote during a rolling deploy.
type savedOrigin struct {
	TeamID   string
	Channel  string
	ThreadTS string
	User     string
	Client   string
	Name     string `json:",omitempty"`
}

// MarshalOrigin encodes o as saved runs and queued turns keep it.
func MarshalOrigin(o approval.Origin) (json.RawMessage, error) {
	b, err := json.Marshal(savedOrigin{TeamID: o.Team, Channel: o.Channel, ThreadTS: o.ThreadTS, User: o.User, Client: o.Client, Name: o.Name})
	if err != nil {
		return nil, fmt.Errorf("origin: %w", err)
	}
	return b, nil
}

// UnmarshalOrigin decodes what MarshalOrigin (or the previous version)
// wrote; empty input is the zero Origin.
func UnmarshalOrigin(b json.RawMessage) (approval.Origin, error) {
	if len(b) == 0 {
		return approval.Origin{}, nil
	}
	var o savedOrigin
	if err := json.Unmarshal(b, &o); err != nil {
		return approval.Origin{}, fmt.Errorf("origin: %w", err)
	}
	return approval.Origin{Team: o.TeamID, Channel: o.Channel, ThreadTS: o.ThreadTS, User: o.User, Client: o.Client, Name: o.Name}, nil
}

// SaveWaitingRun saves the state of the run rc, which waits on token for
// the pending calls until expires, with its origin (see SaveRun). It is
// what package bot's RunSaver asks for.
func (s *Store) SaveWaitingRun(ctx context.Context, rc *agentrunner.RunContext, token string, pending agentrunner.DeferredToolRequests, origin approval.Origin, expires time.Time) error {
	o, err := MarshalOrigin(origin)
	if err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	return s.SaveRun(ctx, RunState{
		RunID: rc.RunID, Token: token, Messages: rc.Messages, Pending: pending, Origin: o, ExpiresAt: expires,
	})
}

// RunOrigin decodes the origin the run was saved with.
func (rs *RunState) RunOrigin() (approval.Origin, error) { return UnmarshalOrigin(rs.Origin) }
