package hook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/slackapprove/slackbot/client"
)

// This file is `slackbot hook claude-code --defer`: a wait that holds no
// process. Claude Code's PreToolUse hook may answer
// permissionDecision "defer" (Claude Code 2.1.332; its hook output
// schema lists "allow" | "deny" | "ask" | "defer"): a `claude -p` run then
// ends with stop_reason "tool_deferred", its session_id and
// deferred_tool_use {id, name, input}, and `claude -p --resume
// <session_id>` fires the hook again for the same tool_use_id (observed
// offline with 2.1.332: agents_claude_test.go), which then answers what
// was decided. See docs/ARCHITECTURE.md, "Deferred coding-agent sessions".
//
// Limits Claude Code puts on defer, read in the 2.1.332 binary:
//   - print mode only: in an interactive session it logs "returned
//     permissionDecision=defer in interactive mode; ignoring (defer is
//     print-mode only)". So the hook defers only when told (--defer, or
//     DeferEnv, which `slackbot agent claude` and `slackbot agent resume`
//     set for the runs they start), and blocks otherwise.
//   - one call per turn: with more than one tool call in the model's
//     batch it means to ignore the defer ("defer is solo-only — siblings
//     would be orphaned on resume"), but does not (claude_run.go): the
//     hook defers one call per run and waits for the others.
//   - a deferred call whose tool is gone on resume (an MCP server that did
//     not come back) ends the resumed run with terminal_reason
//     "tool_deferred_unavailable".

// DeferEnv, set to "1" in the hook's environment, makes `slackbot hook
// claude-code` defer as --defer does. `slackbot agent claude` and
// `slackbot agent resume` set it for the Claude Code runs they start, so
// the same settings block in an interactive session and defer under them.
const DeferEnv = "SLACKBOT_HOOK_DEFER"

// ResumeTokenEnv and ResumeCallEnv are set by `slackbot agent resume` for
// the run it resumes: the request and the call the session deferred. The
// resumed firing for that call reads the request by its token instead of
// repeating the create, so a create that would differ from the first (a
// CI job that resumes with another callback URL or timeout) still finds
// the decision.
const (
	ResumeTokenEnv = "SLACKBOT_RESUME_TOKEN"
	ResumeCallEnv  = "SLACKBOT_RESUME_CALL"
)

// deferOptions are the hook's options in defer mode.
type deferOptions struct {
	// timeout is the request's time to be decided when explicit (the
	// --timeout flag given); else the route's default_timeout applies.
	timeout  time.Duration
	explicit bool
	// wait bounds the wait for a call that cannot be deferred (one of
	// several in its turn): --timeout, or the agent's default wait.
	wait time.Duration
	// callback is SLACKBOT_CALLBACK_URL: slackbot posts the signed end of
	// the request there (the CI recipe in the README).
	callback string
	// resumeToken and resumeCall: ResumeTokenEnv and ResumeCallEnv.
	resumeToken, resumeCall string
}

// deferKey is the idempotency key of the request of a deferred call: the
// same on the first firing and on the resumed run's, so the resumed
// firing finds the request the first one opened. Within the API's 200
// characters: a digest when the ids are longer than Claude Code's.
func deferKey(sessionID, toolUseID string) string {
	k := "claude-code/" + sessionID + "/" + toolUseID
	if len(k) <= 200 {
		return k
	}
	sum := sha256.Sum256([]byte(sessionID + "\x00" + toolUseID))
	return "claude-code/sha256/" + hex.EncodeToString(sum[:])
}

// deferCall opens (or, on the resumed firing, finds again) the request
// of the event's call, and answers what was decided, or "defer" while
// nobody has: a policy or a grant that decided at once answers at once.
// A call still undecided on resume is deferred again, so the run stops
// once more rather than running or failing a call a person may still
// approve; the resumer resumes only sessions whose request ended, so this
// happens only when a session is resumed by hand.
func deferCall(ctx context.Context, api *client.Client, agent *hookAgent, ev *hookEvent, o deferOptions, getenv func(string) string) hookDecision {
	if agent.name != "claude-code" {
		return denyf("slackbot hook %s: --defer is Claude Code's (its PreToolUse \"defer\"); %s has no way to stop a run and resume it", agent.name, agent.product)
	}
	if ev.SessionID == "" || ev.ToolUseID == "" {
		return denyf("slackbot hook %s --defer: the hook event has no session_id or tool_use_id, so the resumed run could not find its request", agent.name)
	}
	req := agent.request(ev, ev.ToolUseID)
	req.IdempotencyKey = deferKey(ev.SessionID, ev.ToolUseID)
	req.CallbackURL = o.callback
	if o.explicit {
		req.Timeout = o.timeout
	}
	var st *client.Approval
	var err error
	if o.resumeToken != "" && o.resumeCall == ev.ToolUseID {
		st, err = api.Get(ctx, o.resumeToken, 0)
	} else {
		st, err = create(ctx, api, req)
	}
	if err != nil {
		return unreachable(api, err)
	}
	if st.Pending() && !claimDeferral(ev, getenv) {
		// Another call of this run was deferred: deferring this one too
		// would lose one of them on resume. Wait here, as without
		// --defer, within the hook's own bound.
		wctx, cancel := context.WithTimeout(ctx, o.wait)
		defer cancel()
		return await(ctx, wctx, api, agent, ev, st, ev.ToolUseID, o.wait)
	}
	if st.Pending() {
		return hookDecision{deferred: true, reason: fmt.Sprintf(
			"Waiting for a decision in Slack (slackbot request %s, until %s); the run resumes once someone decides.",
			st.Token, st.ExpiresAt.UTC().Format(time.RFC3339))}
	}
	return agent.decision(ev, st, ev.ToolUseID)
}
