package hook

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/slackapprove/slackbot/client"
)

// This file is `slackbot agent resume`: one resumer per machine or CI
// runner. It long-polls /v1 for the sessions registered to it whose
// request ended, claims each (once: a second resumer finds nothing to
// do), runs `claude -p --resume` with the registered flags in the
// registered directory, and records how that ended. Nothing waits per
// call: one process serves every deferred session of its key and name.
//
// What it runs is only ever the claude program it was given itself, with
// -p --resume SESSION --output-format json and flags that pass
// client.CheckResumeArgs, in a directory under --root: a registered
// session cannot make it run another program or option. See
// docs/ARCHITECTURE.md, "Deferred coding-agent sessions".

// resumePoll is the long poll of the resumer's listing.
const resumePoll = 30 * time.Second

// runResumer is `slackbot agent resume`.
func runResumer(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("slackbot agent resume", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f agentFlags
	f.register(fs, getenv)
	root := fs.String("root", "/", "resume only sessions whose directory is under this one")
	once := fs.Bool("once", false, "resume what is ready now and exit (CI)")
	lease := fs.Duration("lease", 15*time.Minute, "how long a claim holds a session before another resumer may take it over")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return fmt.Errorf("agent resume: bad arguments (%v)\n%s", err, AgentUsage)
	}
	if err := client.CheckResumer(f.resumer); err != nil {
		return fmt.Errorf("agent resume: --resumer: %w", err)
	}
	if !filepath.IsAbs(*root) || *lease < time.Minute {
		return fmt.Errorf("agent resume: --root must be absolute and --lease at least 1m")
	}
	api, err := newAPIClient(getenv("SLACKBOT_URL"), getenv("SLACKBOT_API_KEY"))
	if err != nil {
		return fmt.Errorf("agent resume: %w", err)
	}
	r := &resumer{api: api, name: f.resumer, claude: f.claude, root: filepath.Clean(*root), lease: *lease, stdout: stdout, stderr: stderr}
	failures := 0
	for {
		wait := resumePoll
		if *once {
			wait = 0
		}
		sessions, err := api.ReadySessions(ctx, r.name, wait)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && client.IsTransient(err) && !*once && failures < maxPollFailures:
			failures++
			fmt.Fprintf(stderr, "slackbot agent resume: %s (retrying)\n", answered(err))
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Duration(failures) * time.Second):
			}
			continue
		case err != nil:
			return fmt.Errorf("agent resume: list sessions at %s: %s", api.Redacted(), answered(err))
		}
		failures = 0
		for _, s := range sessions {
			r.resume(ctx, s)
		}
		if *once {
			return nil
		}
	}
}

// resumer resumes the sessions registered to name.
type resumer struct {
	api            *client.Client
	name, claude   string
	root           string
	lease          time.Duration
	stdout, stderr io.Writer
}

// resume claims s and resumes it; whatever happens is reported on one
// line of stdout, and recorded with the session when the claim was won.
func (r *resumer) resume(ctx context.Context, s client.Session) {
	claimed, err := r.api.ClaimSession(ctx, s.ID, r.name, r.lease)
	var refused *client.Error
	switch {
	case errors.As(err, &refused) && (refused.Status == 409 || refused.Status == 404):
		return // another resumer took it, or it is gone: nothing to do
	case err != nil:
		fmt.Fprintf(r.stderr, "slackbot agent resume: claim session %s: %s\n", s.ID, answered(err))
		return
	case claimed.State == client.SessionFailed:
		fmt.Fprintf(r.stdout, "session %s (claude --resume %s in %s): %s; not retried. Resume it by hand if it still needs to run.\n",
			s.ID, claimed.SessionID, claimed.Cwd, claimed.Outcome)
		return
	}
	outcome := r.run(ctx, claimed)
	fmt.Fprintf(r.stdout, "session %s (claude --resume %s in %s, request %s %s): %s\n",
		s.ID, claimed.SessionID, claimed.Cwd, claimed.Token, claimed.RequestStatus, outcome)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	if _, err := r.api.FinishSession(fctx, claimed.ID, claimed.Attempts, shorten(outcome, 1000)); err != nil {
		fmt.Fprintf(r.stderr, "slackbot agent resume: record the end of session %s: %s\n", s.ID, answered(err))
	}
}

// run checks s again (slackbot checked it when it was registered; the
// resumer trusts no stored session) and resumes it, saying how that
// ended.
func (r *resumer) run(ctx context.Context, s *client.Session) string {
	if err := client.CheckSession(s.Agent, s.SessionID, s.Cwd, s.Resumer, s.Args); err != nil {
		return "refused: " + err.Error()
	}
	if s.Cwd != r.root && !strings.HasPrefix(s.Cwd, strings.TrimSuffix(r.root, "/")+"/") {
		return fmt.Sprintf("refused: %s is not under --root %s", s.Cwd, r.root)
	}
	if fi, err := os.Stat(s.Cwd); err != nil || !fi.IsDir() {
		return fmt.Sprintf("refused: %s is not a directory here", s.Cwd)
	}
	var errs bytes.Buffer
	res, _, err := runClaudeOnce(ctx, r.claude, s.Cwd, append([]string{"-p", "--resume", s.SessionID}, s.Args...),
		[]string{ResumeTokenEnv + "=" + s.Token, ResumeCallEnv + "=" + s.CallID}, &limitedWriter{w: &errs, n: 4096})
	if err != nil {
		return fmt.Sprintf("claude failed: %v: %s", err, shortLine(errs.String(), 300))
	}
	if !res.deferred() {
		return fmt.Sprintf("resumed; the run ended (%s): %s", res.StopReason, shortLine(res.Result, 200))
	}
	// The resumed run went on and deferred another call: register it in
	// turn, with the same flags, directory and resumer.
	next, err := register(ctx, r.api, res, s.Cwd, s.Args, r.name)
	if err != nil {
		return fmt.Sprintf("resumed; the run deferred %s (%s) again, which could not be registered: %s; resume it by hand with: claude -p --resume %s",
			res.DeferredToolUse.Name, res.DeferredToolUse.ID, answered(err), res.SessionID)
	}
	return fmt.Sprintf("resumed; the run deferred %s until someone decides (request %s)", res.DeferredToolUse.Name, next.Token)
}
