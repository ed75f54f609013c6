package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slackapprove/slackbot/bench/internal/benchredis"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/store"
)

// mainPhases runs the phases against one slackbot process and one
// baseline process on database 0: clicks at fixed loads and at saturation,
// click → resume, and posting under rate limits.
func (b *bench) mainPhases(ctx context.Context, t *table) error {
	var extra []string
	var pprofAddr string
	if b.cfg.pprof != "" {
		port, err := freePort()
		if err != nil {
			return err
		}
		pprofAddr = "127.0.0.1:" + strconv.Itoa(port)
		extra = append(extra, "BENCH_PPROF_ADDR="+pprofAddr)
	}
	sb, err := b.startSlackbot("slackbot", b.redis.URL(0), extra...)
	if err != nil {
		return err
	}
	defer sb.stop()
	base, err := b.startBaseline("baseline", b.redis.URL(0))
	if err != nil {
		return err
	}
	defer base.stop()
	st, closeStore := b.storeOn(0)
	defer closeStore()
	stMin, closeMin := b.storeOn(minimalDB)
	defer closeMin()
	minimal, err := b.startMinimal("minimal", b.redis.URL(minimalDB))
	if err != nil {
		return err
	}
	defer minimal.stop()

	var floor loadResult
	if b.cfg.phases["clicks"] {
		if floor, err = b.clickPhases(ctx, t, clickProcs{sb, base, minimal}, st, stMin, pprofAddr); err != nil {
			return err
		}
	}
	if b.cfg.phases["resume"] {
		b.logf("resume: %d waiting runs, clicked at %.0f/s", b.cfg.resumeRuns, b.cfg.resumeRate)
		res, err := b.resumeRuns(ctx, sb.base, st, b.cfg.resumeRuns, b.cfg.resumeRate, "r")
		if err != nil {
			return fmt.Errorf("resume phase: %w", err)
		}
		floorText := "—"
		if floor.OK > 0 {
			floorText = p50p99(floor) + " (one signed request + GET)"
		}
		t.add(fmt.Sprintf("click → card shows the decision, p50 / p99 (%d runs, %.0f clicks/s)", res.Runs, b.cfg.resumeRate),
			p50p99(res.ToCard), floorText, "")
		t.add("click → waiting run resumed, ran the tool and answered in its thread, p50 / p99",
			p50p99(res.ToAnswer), floorText, "")
	}
	if b.cfg.phases["ratelimit"] {
		b.logf("rate limit: %d channels × %d cards at 1 message/s/channel", b.cfg.rlChannels, b.cfg.rlPerChannel)
		res, err := b.rateLimited(ctx, sb.base, b.cfg.rlChannels, b.cfg.rlPerChannel)
		if err != nil {
			return fmt.Errorf("rate-limit phase: %w", err)
		}
		t.add(fmt.Sprintf("cards posted under a 1 message/s/channel limit (429 + Retry-After), %d channels × %d: delivered / dropped / duplicated",
			res.Channels, res.PerChannel),
			fmt.Sprintf("%d / %d / %d (%d answers 429)", res.Delivered, res.Dropped, res.Duplicated, res.Limited),
			fmt.Sprintf("%d / 0 / 0 (every card once)", res.Expected), "")
		t.add("sustained card rate per channel under that limit",
			fmt.Sprintf("%.2f/s (all in %.0f s)", res.Rate, res.Elapsed.Seconds()), "1.00/s (the limit)",
			fmt.Sprintf("%.2f", res.Rate))
	}
	return nil
}

// cpuMeter reads the CPU time the processes of a phase used.
type cpuMeter struct {
	pids  []int
	start []float64
	self  float64
	at    time.Time
}

func newCPUMeter(pids ...int) *cpuMeter {
	m := &cpuMeter{pids: pids, at: time.Now(), self: selfCPU()}
	for _, p := range pids {
		m.start = append(m.start, cpuSeconds(p))
	}
	return m
}

// cores returns the cores each process used on average since the meter
// started, then the bench process itself.
func (m *cpuMeter) cores() []float64 {
	d := time.Since(m.at).Seconds()
	var out []float64
	for i, p := range m.pids {
		out = append(out, (cpuSeconds(p)-m.start[i])/d)
	}
	return append(out, (selfCPU()-m.self)/d)
}

func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// redisPID asks the server for its process id.
func (b *bench) redisPID(ctx context.Context) int {
	rdb := redis.NewClient(&redis.Options{Addr: b.redis.Addr})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// clickProcs are the servers the click phases compare: slackbot, the
// "verify + 1 GET" baseline and the minimal full click path.
type clickProcs struct{ sb, base, min *process }

// clickPhases measures signed clicks at each offered load and at
// saturation, the baseline first, then the minimal full click path, then
// slackbot, with the same generator. Each click's approval is created in
// st (slackbot's) and stMin (the minimal path's). It returns the baseline
// at the lowest load, the floor other latencies are compared with.
func (b *bench) clickPhases(ctx context.Context, t *table, procs clickProcs, st, stMin *store.Store, pprofAddr string) (loadResult, error) {
	sb, base := procs.sb, procs.base
	cfg := b.cfg
	counts := make([]int, len(cfg.rates))
	total := warmup
	for i, r := range cfg.rates {
		counts[i] = int(r * cfg.duration.Seconds())
		total += counts[i]
	}
	satN := int(cfg.satDuration.Seconds() * maxSaturationRate)
	total += satN
	b.logf("clicks: creating %d pending approvals and their cards", total)
	t0 := time.Now()
	all, err := prepareClicks(ctx, st, b.slots, total, "c", stMin)
	if err != nil {
		return loadResult{}, err
	}
	b.logf("clicks: created in %.1f s", time.Since(t0).Seconds())
	cr := &clickRun{
		b: b, t: t, sb: sb, base: base, min: procs.min, bodies: all,
		sbPost:   signedPoster{client: b.client, url: sb.base + "/slack/interactivity", secret: b.secret},
		basePost: signedPoster{client: b.client, url: base.base + "/slack/interactivity", secret: b.secret},
		minPost:  signedPoster{client: b.client, url: procs.min.base + "/slack/interactivity", secret: b.secret},
	}
	approvedBefore, _ := metric(ctx, b.client, sb.base, `slackbot_decisions_total{outcome="approved"}`)
	tooLateBefore := b.tooLate()

	// Warm both up: connections, pools, scripts loaded, caches filled.
	w := cr.take(warmup)
	openLoop(ctx, cr.basePost, w, 500)
	openLoop(ctx, cr.minPost, w, 500)
	cr.acked += openLoop(ctx, cr.sbPost, w, 500).OK
	settle()

	rpid := b.redisPID(ctx)
	floor := cr.offeredLoads(ctx, counts)
	if err := cr.saturation(ctx, satN, rpid, pprofAddr); err != nil {
		return floor, err
	}
	return floor, cr.checkDecisions(ctx, approvedBefore, tooLateBefore)
}

// clickRun is one run of the click phases: the pre-created clicks not yet
// sent, where they go, and how many slackbot acknowledged.
type clickRun struct {
	b                         *bench
	t                         *table
	sb, base, min             *process
	bodies                    [][]byte
	sbPost, basePost, minPost signedPoster
	acked                     int
}

// take returns the next n pre-created clicks.
func (cr *clickRun) take(n int) [][]byte {
	out := cr.bodies[:n]
	cr.bodies = cr.bodies[n:]
	return out
}

// settle lets a phase's after-work (card updates) finish before the next.
func settle() { time.Sleep(time.Second) }

// offeredLoads sends clicks open loop at each offered rate, baseline then
// slackbot, and repeats the 1,000/s clicks (already decided). It returns
// the baseline at the lowest load.
func (cr *clickRun) offeredLoads(ctx context.Context, counts []int) loadResult {
	var floor loadResult
	var at1000 [][]byte
	for i, rate := range cr.b.cfg.rates {
		bodies := cr.take(counts[i])
		cr.b.logf("clicks: %.0f/s offered for %s", rate, cr.b.cfg.duration)
		rb := openLoop(ctx, cr.basePost, bodies, rate)
		settle()
		rm := openLoop(ctx, cr.minPost, bodies, rate)
		settle()
		rs := openLoop(ctx, cr.sbPost, bodies, rate)
		cr.acked += rs.OK
		settle()
		if i == 0 {
			floor = rb
		}
		if rate == 1000 {
			at1000 = bodies
			if p99 := rs.Quantile(0.99); rs.Failed == 0 && p99 < 50*time.Millisecond {
				cr.t.note("Target: acknowledgement p99 under 50 ms at 1,000 clicks/s: met (%s).", msec(p99))
			} else {
				cr.t.note("Target: acknowledgement p99 under 50 ms at 1,000 clicks/s: MISSED (%s, %d failed).", msec(p99), rs.Failed)
			}
		}
		label := fmt.Sprintf("%s clicks/s offered (open loop, %d clicks)", thousands(int(rate)), len(bodies))
		cr.t.add2(label+": acknowledged/s", perSec(rs), perSec(rb), perSec(rm),
			ratio(rs.PerSecond(), rb.PerSecond()), ratio(rs.PerSecond(), rm.PerSecond()))
		cr.t.add2(label+": ack p50 / p99", p50p99(rs), p50p99(rb), p50p99(rm),
			ratio(float64(rs.Quantile(0.99)), float64(rb.Quantile(0.99)))+" (p99)", ratio(float64(rs.Quantile(0.99)), float64(rm.Quantile(0.99)))+" (p99)")
	}
	if at1000 != nil {
		cr.b.logf("clicks: repeated clicks (already decided) at 1,000/s")
		rs := openLoop(ctx, cr.sbPost, at1000, 1000)
		settle()
		cr.t.add(fmt.Sprintf("the same %d clicks again at 1,000/s (already decided: idempotent repeat): ack p50 / p99", len(at1000)),
			p50p99(rs), "(as above)", "")
	}
	return floor
}

// saturation sends n clicks closed loop on many connections, baseline then
// slackbot, measuring the CPU each process spends (and, with pprofAddr,
// slackbot's CPU profile).
func (cr *clickRun) saturation(ctx context.Context, n, rpid int, pprofAddr string) error {
	cfg := cr.b.cfg
	cr.b.logf("clicks: saturation, %d connections, closed loop, %s", cfg.satConns, cfg.satDuration)
	bodies := cr.take(n)
	cpu := newCPUMeter(cr.base.pid(), rpid)
	rb := closedLoop(ctx, cr.basePost, bodies, cfg.satConns, cfg.satDuration)
	bc := cpu.cores()
	settle()
	cpu = newCPUMeter(cr.min.pid(), rpid)
	rm := closedLoop(ctx, cr.minPost, bodies, cfg.satConns, cfg.satDuration)
	mc := cpu.cores()
	settle()
	profileDone := cr.b.profileSlackbot(ctx, pprofAddr)
	cpu = newCPUMeter(cr.sb.pid(), rpid)
	stopSelf := cr.b.profileSelf("bench-cpu.pprof")
	rs := closedLoop(ctx, cr.sbPost, bodies, cfg.satConns, cfg.satDuration)
	stopSelf()
	sc := cpu.cores()
	cr.acked += rs.OK
	if pprofAddr != "" {
		if err := <-profileDone; err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		cr.b.logf("clicks: CPU profile saved in %s", filepath.Join(cfg.pprof, "slackbot-cpu.pprof"))
	}
	label := fmt.Sprintf("saturation (%d connections, closed loop, %s)", cfg.satConns, cfg.satDuration)
	cr.t.add2(label+": clicks/s", perSec(rs), perSec(rb), perSec(rm), ratio(rs.PerSecond(), rb.PerSecond()), ratio(rs.PerSecond(), rm.PerSecond()))
	cr.t.add2(label+": ack p50 / p99", p50p99(rs), p50p99(rb), p50p99(rm),
		ratio(float64(rs.Quantile(0.99)), float64(rb.Quantile(0.99)))+" (p99)", ratio(float64(rs.Quantile(0.99)), float64(rm.Quantile(0.99)))+" (p99)")
	cores := func(c []float64) string { return fmt.Sprintf("%.2f / %.2f / %.2f", c[0], c[1], c[2]) }
	cr.t.add2(label+": CPU cores used by server / Redis / load generator + fake Slack", cores(sc), cores(bc), cores(mc), "", "")
	cr.t.add2(label+": CPU time per acknowledged click, server / Redis / load generator + fake Slack",
		perClick(sc, rs), perClick(bc, rb), perClick(mc, rm),
		ratio(sc[0]/rs.PerSecond(), bc[0]/rb.PerSecond())+" (server)", ratio(sc[0]/rs.PerSecond(), mc[0]/rm.PerSecond())+" (server)")
	cr.minimalTargets(rs, rm, sc, mc)
	if r := rs.PerSecond() / rb.PerSecond(); r >= 0.5 {
		cr.t.note("Target: click throughput at saturation at least half the baseline's: met (%.2f).", r)
	} else {
		cr.t.note("Target: click throughput at saturation at least half the baseline's: MISSED (%.2f).", r)
	}
	if len(bodies) > 0 && rs.Sent >= len(bodies) {
		cr.t.note("Note: slackbot used up all %d pre-created approvals before the saturation phase ended; raise maxSaturationRate.", len(bodies))
	}
	return nil
}

// profileSlackbot saves slackbot's CPU profile of the saturation phase and
// a goroutine dump halfway through, when pprofAddr is set; the channel
// gets the profile's error.
func (b *bench) profileSlackbot(ctx context.Context, pprofAddr string) <-chan error {
	done := make(chan error, 1)
	if pprofAddr == "" {
		return done
	}
	go func() {
		done <- saveProfile(ctx, pprofAddr, int(b.cfg.satDuration.Seconds()), filepath.Join(b.cfg.pprof, "slackbot-cpu.pprof"))
	}()
	go func() {
		time.Sleep(b.cfg.satDuration / 2)
		_ = saveURL(ctx, "http://"+pprofAddr+"/debug/pprof/goroutine?debug=1", filepath.Join(b.cfg.pprof, "slackbot-goroutines.txt"))
	}()
	return done
}

// decisionsSettle is how long checkDecisions waits for the decisions
// metric to move before it reports what it has.
const decisionsSettle = 5 * time.Second

// perClick is CPU time per acknowledged click of each process.
func perClick(cores []float64, r loadResult) string {
	rate := r.PerSecond()
	if rate == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f µs", cores[0]/rate*1e6, cores[1]/rate*1e6, cores[2]/rate*1e6)
}

// checkDecisions notes whether every acknowledged first click either
// recorded its decision or was told, within the acknowledgement budget,
// that it changed nothing (bot's "too late" ephemeral: a click the store
// could not take in 2.5 s decides nothing, by design). The metric is
// counted after the decision is written, which may be after the
// acknowledgement: it is read until the two add up or it stops moving for
// decisionsSettle, so a loaded machine's lag is not reported as a lost
// decision, and a lost one still is.
func (cr *clickRun) checkDecisions(ctx context.Context, approvedBefore float64, tooLateBefore int) error {
	got, tooLate, last, settled := 0, 0, -1, time.Now()
	for {
		approved, err := metric(ctx, cr.b.client, cr.sb.base, `slackbot_decisions_total{outcome="approved"}`)
		if err != nil {
			return err
		}
		got, tooLate = int(approved-approvedBefore), cr.b.tooLate()-tooLateBefore
		if got+tooLate != last {
			last, settled = got+tooLate, time.Now()
		}
		if got+tooLate >= cr.acked || time.Since(settled) > decisionsSettle {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Clicks the load generator gave up on are not acknowledged, yet may
	// still be recorded or told they were too late: the two may add up to
	// more than the acknowledged, never to fewer.
	if got+tooLate < cr.acked {
		cr.t.note("Check: %d clicks acknowledged, but only %d decisions recorded and %d told they were too late: an acknowledged click is unaccounted for.", cr.acked, got, tooLate)
	} else {
		cr.t.note("Check: every one of the %d acknowledged first clicks is accounted for: %d decisions recorded (slackbot_decisions_total), %d told they were too late and changed nothing.", cr.acked, got, tooLate)
	}
	return nil
}

// tooLate counts the ephemerals that told a person their click came too
// late to be recorded (bot's tooLateText).
func (b *bench) tooLate() int {
	n := 0
	for _, c := range b.fake.Calls("chat.postEphemeral") {
		if strings.Contains(c.Params["text"], "could not record your click in time") {
			n++
		}
	}
	return n
}

// warmup is how many clicks warm each server up before measuring.
const warmup = 500

// maxSaturationRate bounds the approvals created for the saturation
// phase: clicks per second slackbot could at most acknowledge.
const maxSaturationRate = 6000

func perSec(r loadResult) string {
	s := fmt.Sprintf("%.0f/s", r.PerSecond())
	if r.Failed > 0 {
		s += fmt.Sprintf(" (%d failed)", r.Failed)
	}
	return s
}

// profileSelf profiles the bench process itself (load generator and fake
// Slack) into name in the -pprof directory until the returned function is
// called; without -pprof it does nothing.
func (b *bench) profileSelf(name string) func() {
	if b.cfg.pprof == "" {
		return func() {}
	}
	if err := os.MkdirAll(b.cfg.pprof, 0o755); err != nil {
		return func() {}
	}
	f, err := os.Create(filepath.Join(b.cfg.pprof, name))
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// metric reads one sample of a Prometheus text exposition.
func metric(ctx context.Context, client *http.Client, base, sample string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, sc.Err()
}

// saveProfile fetches a CPU profile of secs seconds from a pprof server.
func saveProfile(ctx context.Context, addr string, secs int, path string) error {
	return saveURL(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs), path)
}

// saveURL saves what a GET of url answers in path.
func saveURL(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof: status %d", resp.StatusCode)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// table is the bench's output: one row per figure, with its baseline.
type table struct {
	rows  [][6]string
	notes []string
}

// add is a row compared with the "verify + 1 GET" baseline only.
func (t *table) add(metric, slackbot, baseline, ratio string) {
	t.rows = append(t.rows, [6]string{metric, slackbot, baseline, "", ratio, ""})
}

// add2 is a row compared with both baselines: the "verify + 1 GET" one and
// the minimal full click path.
func (t *table) add2(metric, slackbot, baseline, minimal, ratio, ratioMin string) {
	t.rows = append(t.rows, [6]string{metric, slackbot, baseline, minimal, ratio, ratioMin})
}

func (t *table) note(format string, args ...any) {
	t.notes = append(t.notes, fmt.Sprintf(format, args...))
}

func (t *table) print(w io.Writer) {
	fmt.Fprintln(w, "| measure | slackbot | baseline (verify signature + 1 GET) | minimal full click path | slackbot ÷ baseline | slackbot ÷ minimal |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range t.rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r[0], r[1], r[2], r[3], r[4], r[5])
	}
}

// Formatting.

func msec(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

func p50p99(r loadResult) string {
	if len(r.Latencies) == 0 {
		return "—"
	}
	return msec(r.Quantile(0.5)) + " / " + msec(r.Quantile(0.99))
}

func kb(bytes float64) string {
	if bytes < 1024 {
		return fmt.Sprintf("%.0f B", bytes)
	}
	return fmt.Sprintf("%.1f KB", bytes/1024)
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// machine describes where the bench ran.
func machine(rs *benchredis.Server) string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = "Linux " + strings.TrimSpace(string(b)) + ", "
	}
	rv := "?"
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rdb.Close()
	if info, err := rdb.Info(context.Background(), "server").Result(); err == nil {
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "redis_version:"); ok {
				rv = v
			}
		}
	}
	return fmt.Sprintf("Machine: %d cores (%s), %s%s %s/%s, redis-server %s; load generator, fake Slack, slackbot, baseline and Redis share these cores.",
		runtime.NumCPU(), cpu, kernel, runtime.Version(), runtime.GOOS, runtime.GOARCH, rv)
}

// lifecyclePhase counts Redis traffic through the proxy, with a slackbot
// and a baseline of their own on database 1.
func (b *bench) lifecyclePhase(ctx context.Context, t *table) error {
	proxy, err := startProxy(b.redis.Addr)
	if err != nil {
		return err
	}
	defer proxy.close()
	url := "redis://" + proxy.addr() + "/1"
	sb, err := b.startSlackbot("slackbot (counted)", url)
	if err != nil {
		return err
	}
	defer sb.stop()
	st, closeStore := b.storeOn(1)
	defer closeStore()
	b.logf("lifecycle: %d approval lifecycles and %d clicks through the counting proxy", b.cfg.lifecycles, b.cfg.lcClicks)
	res, err := b.measureLifecycles(ctx, sb.base, proxy, st, b.cfg.lifecycles, b.cfg.lcClicks)
	if err != nil {
		return fmt.Errorf("lifecycle phase: %w", err)
	}
	sb.stop()
	base, err := b.startBaseline("baseline (counted)", url)
	if err != nil {
		return err
	}
	defer base.stop()
	body := clickBody(alice, "C0X", "1.1", "x", []byte("[]"), "1.x.y", "approve")
	bodies := make([][]byte, 500)
	for i := range bodies {
		bodies[i] = body
	}
	bl, err := b.baselineTraffic(ctx, base.base, proxy, bodies)
	if err != nil {
		return err
	}
	t.add(fmt.Sprintf("Redis round trips per approval lifecycle (mention → card → click → resume → tool → answer; %d runs)", res.Runs),
		fmt.Sprintf("%.1f", res.PerRun.RoundTrips), fmt.Sprintf("%.1f per request", bl.RoundTrips), "")
	t.add("Redis bytes per approval lifecycle, sent / received",
		kb(res.PerRun.BytesUp)+" / "+kb(res.PerRun.BytesDown), kb(bl.BytesUp)+" / "+kb(bl.BytesDown)+" per request", "")
	t.add(fmt.Sprintf("Redis round trips per click (%d clicks on pending approvals; the card update after the ack included)", res.Clicks),
		fmt.Sprintf("%.1f", res.PerClick.RoundTrips), fmt.Sprintf("%.1f", bl.RoundTrips), ratio(res.PerClick.RoundTrips, bl.RoundTrips))
	t.add("Redis bytes per click, sent / received",
		kb(res.PerClick.BytesUp)+" / "+kb(res.PerClick.BytesDown), kb(bl.BytesUp)+" / "+kb(bl.BytesDown),
		ratio(res.PerClick.BytesUp+res.PerClick.BytesDown, bl.BytesUp+bl.BytesDown))
	t.note("Background Redis traffic of an idle slackbot (heartbeat, sweeps, resume-queue reads), subtracted above: %.1f round trips/s.", res.Background.RoundTrips)
	return nil
}
