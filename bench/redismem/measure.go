package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// keyClass is the keys of one kind (a name pattern) after a path ran.
type keyClass struct {
	pattern string
	keys    int
	// bytes is the kind's MEMORY USAGE after, less before (for shared
	// keys that existed before).
	bytes int64
	// noTTL counts keys of the kind without a TTL.
	noTTL int
	// extra says more of the kind: entries per approval of a stream, members of a set.
	extra string
}

// measurement is one path's keys and used_memory growth for n approvals.
type measurement struct {
	n       int
	classes []keyClass
	used    int64
}

// measure runs create, which makes n pending approvals on an empty
// keyspace under prefix, and reads every key under prefix after it.
func measure(ctx context.Context, rdb redisClient, prefix string, n int, create func() error) (*measurement, error) {
	before, err := keyUsage(ctx, rdb, prefix)
	if err != nil {
		return nil, err
	}
	used0, err := usedMemory(ctx, rdb)
	if err != nil {
		return nil, err
	}
	if err := create(); err != nil {
		return nil, err
	}
	used1, err := usedMemory(ctx, rdb)
	if err != nil {
		return nil, err
	}
	after, err := keyUsage(ctx, rdb, prefix)
	if err != nil {
		return nil, err
	}
	m := &measurement{n: n, used: used1 - used0}
	byClass := map[string]*keyClass{}
	for k, u := range after {
		pat := pattern(strings.TrimPrefix(k, prefix))
		c := byClass[pat]
		if c == nil {
			c = &keyClass{pattern: pat}
			byClass[pat] = c
		}
		c.keys++
		c.bytes += u.bytes - before[k].bytes
		if u.pttl <= 0 {
			c.noTTL++
		}
		if u.length > 0 && !strings.Contains(pat, "…") {
			c.extra = fmt.Sprintf("%s of %d entries (+%.2f per approval)", u.typ, u.length, float64(u.length-before[k].length)/float64(n))
		}
	}
	for _, c := range byClass {
		m.classes = append(m.classes, *c)
	}
	slices.SortFunc(m.classes, func(a, b keyClass) int { return int(b.bytes - a.bytes) })
	return m, nil
}

// pattern names a key's kind: each segment of its name that is not a
// short lowercase word (a token, a run id, a thread) becomes "…".
func pattern(name string) string {
	segs := strings.Split(name, ":")
	for i, s := range segs {
		if len(s) > 12 || strings.IndexFunc(s, func(r rune) bool { return r < 'a' || r > 'z' }) >= 0 {
			segs[i] = "…"
		}
	}
	return strings.Join(segs, ":")
}

type usage struct {
	bytes  int64
	pttl   int64
	typ    string
	length int64
}

// keyUsage returns MEMORY USAGE (all samples), PTTL, type and, for
// streams and sorted sets, the length of every key under prefix.
func keyUsage(ctx context.Context, rdb redisClient, prefix string) (map[string]usage, error) {
	var keys []string
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return nil, err
	}
	out := make(map[string]usage, len(keys))
	for chunk := range slices.Chunk(keys, 500) {
		p := rdb.Pipeline()
		mem := make([]interface{ Val() int64 }, len(chunk))
		ttl := make([]interface{ Val() time.Duration }, len(chunk))
		for i, k := range chunk {
			mem[i] = p.MemoryUsage(ctx, k, 0)
			ttl[i] = p.PTTL(ctx, k)
		}
		typ := make([]interface{ Val() string }, len(chunk))
		for i, k := range chunk {
			typ[i] = p.Type(ctx, k)
		}
		if _, err := p.Exec(ctx); err != nil {
			return nil, err
		}
		for i, k := range chunk {
			out[k] = usage{bytes: mem[i].Val(), pttl: pttlMS(ttl[i]), typ: typ[i].Val()}
		}
	}
	for k, u := range out {
		switch u.typ {
		case "stream":
			u.length = rdb.XLen(ctx, k).Val()
		case "zset":
			u.length = rdb.ZCard(ctx, k).Val()
		}
		out[k] = u
	}
	return out, nil
}

// pttlMS reads a PTTL reply: go-redis returns a duration, or -1 and -2
// (no TTL, no key) as nanoseconds.
func pttlMS(v interface{ Val() time.Duration }) int64 {
	d := v.Val()
	if d < 0 {
		return int64(d)
	}
	return d.Milliseconds()
}

func usedMemory(ctx context.Context, rdb redisClient) (int64, error) {
	info, err := rdb.InfoMap(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(info["Memory"]["used_memory"], 10, 64)
}

// issueKeys are the keys the issue counts: the record, the run state and
// the audit stream.
var issueKeys = map[string]bool{"a:…": true, "run:…": true, "audit": true}

// print writes the path's table and returns how many keys have no TTL.
func (m *measurement) print(out io.Writer, name string) int {
	fmt.Fprintf(out, "### %s: %d pending approvals\n\n", name, m.n)
	fmt.Fprintln(out, "| key | keys | per pending approval | notes |")
	fmt.Fprintln(out, "|---|---|---|---|")
	var total, issue int64
	noTTL := 0
	for _, c := range m.classes {
		total += c.bytes
		if issueKeys[c.pattern] {
			issue += c.bytes
		}
		noTTL += c.noTTL
		note := c.extra
		if c.noTTL > 0 {
			note = strings.TrimSpace(note + fmt.Sprintf(" %d WITHOUT A TTL", c.noTTL))
		}
		fmt.Fprintf(out, "| `%s` | %d | %.0f B | %s |\n", c.pattern, c.keys, float64(c.bytes)/float64(m.n), note)
	}
	verdict := func(per float64) string {
		if per > target {
			return fmt.Sprintf("target ≤ %d B: over by %.0f B", target, per-target)
		}
		return fmt.Sprintf("target ≤ %d B: within", target)
	}
	per, perIssue := float64(total)/float64(m.n), float64(issue)/float64(m.n)
	fmt.Fprintf(out, "| record + run state + audit share (what the issue counts) | | %.0f B | %s |\n", perIssue, verdict(perIssue))
	fmt.Fprintf(out, "| **total, every key (MEMORY USAGE)** | | **%.0f B** | %s |\n", per, verdict(per))
	fmt.Fprintf(out, "| INFO used_memory growth | | %.0f B | cross-check (includes allocator overhead MEMORY USAGE leaves out) |\n", float64(m.used)/float64(m.n))
	fmt.Fprintf(out, "\nkeys without a TTL: %d\n\n", noTTL)
	return noTTL
}
