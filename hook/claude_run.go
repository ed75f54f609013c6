package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// One deferral per run: Claude Code 2.1.332 defers every call of a reply
// whose hook answers "defer", ends the run reporting the last, and on
// resume the others are gone from the conversation: never run, never
// answered, the model never told. Its own guard ("defer is solo-only")
// counts the calls of one transcript entry, and a streamed reply is
// written one entry per call, so it does not catch this. A call whose
// hook fires after another call of the same run was deferred is a
// sibling of it (a deferral ends the run with that reply): the hook
// waits for it as without --defer, and the run, once every sibling is
// decided and ran, ends on the one deferred call, which the resume runs
// (observed offline: TestClaudeCodeDefer, "two calls in one reply").

// RunDirEnv names a directory private to one Claude Code run: `slackbot
// agent claude` and `slackbot agent resume` make one for each run they
// start and remove it after. The run's first deferral is recorded there.
const RunDirEnv = "SLACKBOT_DEFER_RUN"

// claimDeferral reports whether the event's call may be deferred: it is
// the first of its run to be (or the same call again), recorded under the
// run's marker. Without RunDirEnv the run is told by Claude Code's
// prompt_id (the same for every call of a run's prompt), under the user's
// cache directory; without that either, or when the marker cannot be
// written or read, it reports false, and the call is waited for.
func claimDeferral(ev *hookEvent, getenv func(string) string) bool {
	path, err := deferralMarker(ev, getenv)
	if err != nil {
		return false
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_, werr := f.WriteString(ev.ToolUseID)
		if cerr := f.Close(); werr != nil || cerr != nil {
			_ = os.Remove(path)
			return false
		}
		return true
	}
	if !errors.Is(err, fs.ErrExist) {
		return false
	}
	b, err := os.ReadFile(path)
	return err == nil && string(b) == ev.ToolUseID
}

// deferralMarker is the file that records the deferral of the event's
// run.
func deferralMarker(ev *hookEvent, getenv func(string) string) (string, error) {
	if dir := getenv(RunDirEnv); dir != "" {
		if !filepath.IsAbs(dir) {
			return "", errors.New(RunDirEnv + " is not an absolute path")
		}
		return filepath.Join(dir, "deferred"), nil
	}
	if ev.PromptID == "" {
		return "", errors.New("no " + RunDirEnv + " and no prompt_id: the run cannot be told")
	}
	cache := getenv("XDG_CACHE_HOME") // as os.UserCacheDir reads it, from getenv
	if !filepath.IsAbs(cache) {
		var err error
		if cache, err = os.UserCacheDir(); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(cache, "slackbot", "deferred")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	forgetOldMarkers(dir)
	sum := sha256.Sum256([]byte(ev.SessionID + "\x00" + ev.PromptID))
	return filepath.Join(dir, hex.EncodeToString(sum[:])), nil
}

// markerLife is how long a marker under the cache directory is kept: a
// run's siblings fire within seconds of its deferral.
const markerLife = 7 * 24 * time.Hour

// forgetOldMarkers removes, best effort, the markers in dir older than
// markerLife, so the directory does not grow with every deferred run.
func forgetOldMarkers(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > markerLife {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// newRunDir makes the directory of one Claude Code run (RunDirEnv).
func newRunDir() (string, error) {
	return os.MkdirTemp("", "slackbot-claude-run-")
}

// runDirVar is the RunDirEnv setting for dir.
func runDirVar(dir string) string { return RunDirEnv + "=" + dir }
