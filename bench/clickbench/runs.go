package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/internal/slackfake"
	"github.com/slackapprove/slackbot/store"
)

// mentioner starts runs in a slackbot process the way Slack does: a
// message mentioning the bot in the fake workspace, then the signed
// app_mention event for it.
type mentioner struct {
	client *http.Client
	fake   *slackfake.Server
	secret string
	seq    int
	mu     sync.Mutex
}

// mention posts "<@bot> text" as Carol in channel, sends the event to base,
// and returns the message's ts (the run's thread).
func (m *mentioner) mention(ctx context.Context, base, channel, text string) (string, error) {
	full := "<@" + m.fake.BotUserID() + "> " + text
	msg, err := m.fake.PostAsUser(channel, carol, full, "")
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	m.seq++
	id := fmt.Sprintf("EvBENCH%08d", m.seq)
	m.mu.Unlock()
	body, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": teamID, "api_app_id": "A0APP", "event_id": id, "event_time": time.Now().Unix(),
		"event": map[string]any{"type": "app_mention", "user": carol, "text": full, "ts": msg.TS, "channel": channel, "event_ts": msg.TS},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/slack/events", strings.NewReader(string(body)))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	bot.SignSlackRequest(req.Header, m.secret, time.Now(), body)
	resp, err := m.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("app_mention: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("app_mention: status %d", resp.StatusCode)
	}
	return msg.TS, nil
}

// mentionAll starts one run per text, a few at a time, and returns their
// threads in order.
func (m *mentioner) mentionAll(ctx context.Context, base, channel string, texts []string) ([]string, error) {
	threads := make([]string, len(texts))
	errs := make([]error, len(texts))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, text := range texts {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			threads[i], errs[i] = m.mention(ctx, base, channel, text)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return threads, nil
}

// runCard is one waiting run's approval card.
type runCard struct {
	msg    slackfake.Message
	token  string
	thread string
}

// approveValue returns the value of a card's Approve button.
func approveValue(m slackfake.Message) string {
	for _, b := range m.Blocks {
		ab, ok := b.(*slack.ActionBlock)
		if !ok {
			continue
		}
		for _, el := range ab.Elements.ElementSet {
			if btn, ok := el.(*slack.ButtonBlockElement); ok && btn.ActionID == bot.ActionIDApprove {
				return btn.Value
			}
		}
	}
	return ""
}

// waitCards waits until channel holds want cards after the first skip
// messages, and maps each to its token and its run's thread.
func waitCards(ctx context.Context, fake *slackfake.Server, st *store.Store, channel string, skip, want int, timeout time.Duration) ([]runCard, error) {
	deadline := time.Now().Add(timeout)
	var msgs []slackfake.Message
	for {
		msgs = nil
		for _, m := range fake.Messages(channel)[skip:] {
			if m.ThreadTS == "" && len(m.Blocks) > 0 {
				msgs = append(msgs, m)
			}
		}
		if len(msgs) >= want {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d cards in %s after %s", len(msgs), want, channel, timeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	cards := make([]runCard, 0, len(msgs))
	for _, m := range msgs {
		token, _, err := bot.DecodeAction(approveValue(m))
		if err != nil {
			return nil, fmt.Errorf("card %s: %w", m.TS, err)
		}
		rec, err := st.Get(ctx, token)
		if err != nil {
			return nil, fmt.Errorf("card %s: %w", m.TS, err)
		}
		cards = append(cards, runCard{msg: m, token: token, thread: rec.Origin.ThreadTS})
	}
	return cards, nil
}

// resumeResult is what clicking waiting runs' cards measured.
type resumeResult struct {
	Runs int
	// ToCard is click → the card shows the decision (the first chat.update
	// after the click); ToAnswer is click → the run's answer is posted in
	// its thread: the run was woken, resumed, ran the approved tool, and
	// reported.
	ToCard, ToAnswer loadResult
	Elapsed          time.Duration
}

// resumeRuns starts n runs in the slackbot at base (each deletes its own
// sandbox file), waits for their cards, clicks Approve on each at rate per
// second (open loop), and waits for every answer.
func (b *bench) resumeRuns(ctx context.Context, base string, st *store.Store, n int, rate float64, tag string) (resumeResult, error) {
	texts := make([]string, n)
	for i := range texts {
		name := fmt.Sprintf("%s%04d", tag, i)
		if err := os.WriteFile(filepath.Join(b.sandbox, name), []byte("x"), 0o644); err != nil {
			return resumeResult{}, err
		}
		texts[i] = "delete the file " + name
	}
	skip := len(b.fake.Messages(cardsChan))
	start := time.Now()
	if _, err := b.mentions.mentionAll(ctx, base, general, texts); err != nil {
		return resumeResult{}, err
	}
	cards, err := waitCards(ctx, b.fake, st, cardsChan, skip, n, 60*time.Second)
	if err != nil {
		return resumeResult{}, err
	}
	poster := signedPoster{client: b.client, url: base + "/slack/interactivity", secret: b.secret}
	due := make([]time.Time, len(cards))
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) / rate)
	t0 := time.Now()
	for i, c := range cards {
		due[i] = t0.Add(time.Duration(i) * interval)
		if d := time.Until(due[i]); d > 0 {
			time.Sleep(d)
		}
		body := clickBody(alice, c.msg.Channel, c.msg.TS, c.msg.Text, c.msg.BlocksJSON, approveValue(c.msg), bot.ActionIDApprove)
		wg.Go(func() { poster.post(ctx, body) })
	}
	wg.Wait()
	res := resumeResult{Runs: n}
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; i < len(cards); {
		replies := b.fake.Replies(general, cards[i].thread)
		var answer *slackfake.Message
		for _, r := range replies {
			if r.TS != cards[i].thread && r.User == b.fake.BotUserID() {
				answer = &r
				break
			}
		}
		if answer == nil {
			if time.Now().After(deadline) {
				return res, fmt.Errorf("run %d of %d: no answer 60s after the clicks", i+1, len(cards))
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		res.ToAnswer.Latencies = append(res.ToAnswer.Latencies, answer.Posted.Sub(due[i]))
		if cur, ok := b.fake.Message(cards[i].msg.Channel, cards[i].msg.TS); ok && len(cur.Edits) > 0 {
			res.ToCard.Latencies = append(res.ToCard.Latencies, cur.Edits[0].At.Sub(due[i]))
		}
		i++
	}
	res.Elapsed = time.Since(start)
	res.ToAnswer.OK, res.ToCard.OK = len(res.ToAnswer.Latencies), len(res.ToCard.Latencies)
	return res, nil
}

// perUnit is Redis traffic per lifecycle, click or request.
type perUnit struct {
	RoundTrips, BytesUp, BytesDown float64
}

// lifecycleResult is Redis traffic per approval lifecycle.
type lifecycleResult struct {
	Runs       int
	PerRun     perUnit // net of background traffic
	Background perUnit // per second, idle
	Clicks     int
	PerClick   perUnit
}

// measureLifecycles counts the Redis traffic of whole approval lifecycles
// (mention → run → card → click → resume → tool → answer) through the
// counting proxy, net of the idle background traffic of the process
// (heartbeat, sweeps, resume-queue reads) measured first, and of clicks
// alone on pre-created approvals.
func (b *bench) measureLifecycles(ctx context.Context, base string, proxy *countingProxy, st *store.Store, runs, clicks int) (lifecycleResult, error) {
	idle := 3 * time.Second
	c0 := proxy.counts()
	time.Sleep(idle)
	bg := per(proxy.counts().sub(c0), idle.Seconds())
	net := func(c proxyCounts, d time.Duration, n int) perUnit {
		s := d.Seconds()
		return perUnit{
			RoundTrips: (float64(c.RoundTrips) - bg.RoundTrips*s) / float64(n),
			BytesUp:    (float64(c.BytesUp) - bg.BytesUp*s) / float64(n),
			BytesDown:  (float64(c.BytesDown) - bg.BytesDown*s) / float64(n),
		}
	}
	res := lifecycleResult{Runs: runs, Clicks: clicks, Background: bg}

	c1, t1 := proxy.counts(), time.Now()
	if _, err := b.resumeRuns(ctx, base, st, runs, 100, "l"); err != nil {
		return res, err
	}
	time.Sleep(300 * time.Millisecond) // outcomes audited after the answer
	res.PerRun = net(proxy.counts().sub(c1), time.Since(t1), runs)

	bodies, err := prepareClicks(ctx, st, b.slots, clicks, "lc")
	if err != nil {
		return res, err
	}
	c2, t2 := proxy.counts(), time.Now()
	r := openLoop(ctx, signedPoster{client: b.client, url: base + "/slack/interactivity", secret: b.secret}, bodies, 200)
	if r.Failed > 0 {
		return res, fmt.Errorf("%d of %d clicks failed", r.Failed, r.Sent)
	}
	time.Sleep(200 * time.Millisecond)
	res.PerClick = net(proxy.counts().sub(c2), time.Since(t2), clicks)
	return res, nil
}

// per divides counts by n.
func per(c proxyCounts, n float64) perUnit {
	return perUnit{float64(c.RoundTrips) / n, float64(c.BytesUp) / n, float64(c.BytesDown) / n}
}

// baselineTraffic counts the Redis traffic of n requests to the baseline
// server behind the proxy.
func (b *bench) baselineTraffic(ctx context.Context, base string, proxy *countingProxy, bodies [][]byte) (perUnit, error) {
	c0 := proxy.counts()
	r := openLoop(ctx, signedPoster{client: b.client, url: base + "/slack/interactivity", secret: b.secret}, bodies, 200)
	if r.Failed > 0 {
		return perUnit{}, fmt.Errorf("baseline: %d of %d requests failed", r.Failed, r.Sent)
	}
	return per(proxy.counts().sub(c0), float64(len(bodies))), nil
}
