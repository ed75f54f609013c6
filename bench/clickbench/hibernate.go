package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// heapBuild is one slackbot build the heap phase measures.
type heapBuild struct {
	name, bin string
	db        int
}

// heapPhase measures, for the current tree and (with -before) an older
// commit, in the same run, rounds times alternating: what runs started by
// mentions cost their process while they wait, and how fast a click
// resumes a waiting run; then, for the current tree, what N pending
// approvals created through the ask path cost each of two slackbot
// processes and Redis.
func (b *bench) heapPhase(ctx context.Context, t *table) error {
	b.logf("heap: building cmd/slackbot with pprof")
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	after, err := buildPprofSlackbot(root, filepath.Join(b.dir, "heap-after"))
	if err != nil {
		return err
	}
	builds := []heapBuild{{name: "this tree", bin: after, db: 3}}
	if c := b.cfg.before; c != "" {
		b.logf("heap: building cmd/slackbot at %s", c)
		src := filepath.Join(b.dir, "before-src")
		if err := gitArchive(root, c, src); err != nil {
			return err
		}
		bin, err := buildPprofSlackbot(src, filepath.Join(b.dir, "heap-before"))
		if err != nil {
			return err
		}
		builds = append(builds, heapBuild{name: "before (" + c + ")", bin: bin, db: 4})
	}
	type rows struct {
		mentioned []mentionedResult
		resume    []resumeResult
	}
	got := make([]rows, len(builds))
	for round := range b.cfg.heapRounds {
		for i, hb := range builds {
			m, r, err := b.mentionedRound(ctx, hb, fmt.Sprintf("h%d%d", round, i), len(builds) > 1)
			if err != nil {
				return fmt.Errorf("heap phase, %s: %w", hb.name, err)
			}
			got[i].mentioned = append(got[i].mentioned, m)
			got[i].resume = append(got[i].resume, r)
		}
	}
	beforeText := func(f func(rows) string) string {
		if len(builds) < 2 {
			return "— (no -before)"
		}
		return f(got[1]) + " (" + builds[1].name + ")"
	}
	perRun := func(r rows) string {
		var s []string
		for _, m := range r.mentioned {
			s = append(s, fmt.Sprintf("%.2f / %s / %s", m.GoroutinesPerRun, kb(m.Heap), kb(m.Stack)))
		}
		return strings.Join(s, "; ")
	}
	resumed := func(r rows) string {
		var s []string
		for _, x := range r.resume {
			s = append(s, p50p99(x.ToAnswer))
		}
		return strings.Join(s, "; ")
	}
	t.add(fmt.Sprintf("waiting runs started by mentions (%d per round, %d rounds): goroutines / Go heap / goroutine stacks per waiting run in its slackbot process", b.cfg.heapMentions, b.cfg.heapRounds),
		perRun(got[0]), beforeText(perRun), "target 0 / < 1 KB / 0")
	if len(builds) > 1 {
		t.add(fmt.Sprintf("click → waiting run resumed, answered in its thread, p50 / p99 (%d runs, %.0f clicks/s, per round)", b.cfg.resumeRuns, b.cfg.resumeRate),
			resumed(got[0]), beforeText(resumed), "target < 5 ms / < 25 ms")
	}
	return b.pendingRows(ctx, t, builds[0])
}

// mentionedRound starts a build's slackbot on its database, measures what
// runs started by mentions cost while they wait, then, with resume set,
// clicks waiting runs at the resume phase's rate (beside another build:
// alone, the resume phase measures that).
func (b *bench) mentionedRound(ctx context.Context, hb heapBuild, tag string, resume bool) (mentionedResult, resumeResult, error) {
	if err := b.flushDB(ctx, hb.db); err != nil {
		return mentionedResult{}, resumeResult{}, err
	}
	p, addr, err := b.startPprofSlackbot(ctx, "heap "+hb.name, hb.bin, hb.db)
	if err != nil {
		return mentionedResult{}, resumeResult{}, err
	}
	defer p.stop()
	st, closeStore := b.storeOn(hb.db)
	defer closeStore()
	b.logf("heap: %d runs by mentions on %s", b.cfg.heapMentions, hb.name)
	m, err := b.measureMentioned(ctx, p.base, addr, st, b.cfg.heapMentions, tag+"m")
	if err != nil || !resume {
		return m, resumeResult{}, err
	}
	b.logf("heap: resume, %d runs at %.0f/s on %s", b.cfg.resumeRuns, b.cfg.resumeRate, hb.name)
	r, err := b.resumeRuns(ctx, p.base, st, b.cfg.resumeRuns, b.cfg.resumeRate, tag+"r")
	return m, r, err
}

// pendingRows creates each -heap count of pending approvals through the
// ask path while two slackbot processes of hb run, and adds their rows.
func (b *bench) pendingRows(ctx context.Context, t *table, hb heapBuild) error {
	for _, n := range b.cfg.heap {
		if err := b.pendingRow(ctx, t, hb, n); err != nil {
			return err
		}
	}
	return b.flushDB(ctx, hb.db)
}

// pendingRow is pendingRows for n pending approvals.
func (b *bench) pendingRow(ctx context.Context, t *table, hb heapBuild, n int) error {
	if err := b.flushDB(ctx, hb.db); err != nil {
		return err
	}
	var addrs []string
	for _, name := range []string{"A", "B"} {
		p, addr, err := b.startPprofSlackbot(ctx, "heap replica "+name, hb.bin, hb.db)
		if err != nil {
			return err
		}
		defer p.stop()
		addrs = append(addrs, addr)
	}
	b.logf("heap: %d pending approvals through the ask path", n)
	res, err := b.measurePending(ctx, hb.db, addrs, n)
	if err != nil {
		return err
	}
	var procs []string
	for i := range addrs {
		procs = append(procs, fmt.Sprintf("%.4f / %s", res.goroutines[i], kb(res.heap[i])))
	}
	b.logf("heap: %d pending in %.0f s: per pending %s in the slackbot processes, %s kept by the asker, %s in Redis",
		n, res.child.Seconds, strings.Join(procs, "; "), kb(res.child.HeapPerRun), kb(res.redisPerPending))
	t.add(fmt.Sprintf("%s pending approvals of Slack-started runs, created through the ask path (%.0f s, %d at once): goroutines / Go heap per pending, in each of 2 slackbot processes",
		thousands(n), res.child.Seconds, heapWorkers),
		strings.Join(procs, "; "), "target 0 / < 1 KB", "")
	t.add(fmt.Sprintf("… Go heap per suspended run kept by the process that asked (%s runs, after a GC)", thousands(n)),
		fmt.Sprintf("%s, %.4f goroutines", kb(res.child.HeapPerRun), res.child.GoroutinesPerRun), "target 0", "")
	t.add(fmt.Sprintf("… Redis used_memory per pending approval (record + run state + audit), %s pending", thousands(n)),
		kb(res.redisPerPending), "target ≤ 1.5 KB", fmt.Sprintf("%.2f× the target", res.redisPerPending/1536))
	return nil
}

// flushDB empties database db; a million pending approvals take Redis a
// while to drop, so it waits for that.
func (b *bench) flushDB(ctx context.Context, db int) error {
	rdb := redis.NewClient(&redis.Options{Addr: b.redis.Addr, DB: db, ReadTimeout: 2 * time.Minute})
	defer rdb.Close()
	return rdb.FlushDB(ctx).Err()
}

// startPprofSlackbot starts bin (built with the pprof shim) on database
// db and returns it with its pprof address.
func (b *bench) startPprofSlackbot(ctx context.Context, name, bin string, db int) (*process, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	env := append(append([]string{}, b.env...), "REDIS_URL="+b.redis.URL(db), "BENCH_PPROF_ADDR="+addr)
	p, err := startProcess(name, bin, []string{"serve"}, env)
	if err != nil {
		return nil, "", err
	}
	if err := waitHTTP(ctx, b.client, p.base+"/readyz", 20*time.Second); err != nil {
		p.stop()
		return nil, "", err
	}
	if err := waitHTTP(ctx, b.client, "http://"+addr+"/debug/pprof/", 10*time.Second); err != nil {
		p.stop()
		return nil, "", err
	}
	return p, addr, nil
}

// buildPprofSlackbot builds root's cmd/slackbot, with the pprof shim, into
// dir.
func buildPprofSlackbot(root, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	shim := filepath.Join(dir, "pprof_shim.go")
	if err := os.WriteFile(shim, []byte(pprofShim), 0o600); err != nil {
		return "", err
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{
		filepath.Join(root, "cmd", "slackbot", "zz_bench_pprof.go"): shim,
	}})
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "slackbot")
	cmd := exec.Command("go", "build", "-overlay", ov, "-o", bin, "./cmd/slackbot")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/slackbot in %s: %w\n%s", root, err, out)
	}
	return bin, nil
}

// gitArchive writes the tree of commit in root's repository to dir.
func gitArchive(root, commit, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, commit, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git archive %s: %w\n%s", commit, err, out)
	}
	return nil
}
