package bot

import (
	"context"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
)

// RunSaver keeps the state of a run that waits on a token, so that another
// process can resume it when the token ends (durable resume). Package store
// implements it; Config.Runs takes it, and nil saves nothing (a run then
// resumes only in the process that asked).
type RunSaver interface {
	SaveWaitingRun(ctx context.Context, rc *agentrunner.RunContext, token string, pending agentrunner.DeferredToolRequests, origin approval.Origin, expires time.Time) error
}
