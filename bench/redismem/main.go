// Command redismem measures what one pending approval costs in Redis, key
// by key, on loopback only: it starts a redis-server of its own and a fake
// Slack Web API (internal/slackfake), creates -n pending approvals through
// slackbot's own code, and prints a markdown table of the memory each kind
// of key takes per pending approval (MEMORY USAGE key SAMPLES 0), the
// shared keys' growth per approval (the audit stream, the deadline set),
// and INFO used_memory per approval as a cross-check.
//
//	go run ./bench/redismem           # both paths, 2,000 approvals each
//	go run ./bench/redismem -n 10000
//
// Two paths are measured, each on an empty keyspace: a Slack-started run
// (agentrunner.Runner with a scripted model — a prompt, two model turns
// with text, a tool call that ran, then a call of ~200 B of arguments that
// needs approval — AskHandler on store.Tokens and approval.Service.Ask
// posting its card through bot.Cards; with the event dedupe key and the
// thread lease the bot writes for the run), and a /v1 request
// (approval.Service.Open with a callback URL, and its idempotency key).
// It checks that every key written has a TTL. It needs redis-server on
// PATH.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// target is the budget per pending approval, audit share included.
const target = 1536

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "redismem:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("redismem", flag.ContinueOnError)
	n := fs.Int("n", 2000, "pending approvals to create per path")
	listpack := fs.String("hash-max-listpack-value", "64,512", "Redis's hash-max-listpack-value settings to measure with, in turn (64 is Redis's default, 512 deploy/'s)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 {
		return fmt.Errorf("-n must be at least 1")
	}
	srv, err := startRedis()
	if err != nil {
		return err
	}
	defer srv.stop()
	rdb := srv.client()
	defer rdb.Close()
	if err := printServer(ctx, out, rdb); err != nil {
		return err
	}
	fake, slackURL, closeFake, err := serveFake()
	if err != nil {
		return err
	}
	defer closeFake()

	paths := []struct {
		name   string
		create func(ctx context.Context, e *env, n int) error
	}{
		{"Slack-started run (record + run state + audit + bot keys)", createSlackRuns},
		{"/v1 request (record + audit + idempotency key)", createAPIRequests},
	}
	var noTTL int
	for _, lp := range strings.Split(*listpack, ",") {
		if err := rdb.ConfigSet(ctx, "hash-max-listpack-value", strings.TrimSpace(lp)).Err(); err != nil {
			return fmt.Errorf("hash-max-listpack-value %s: %w", lp, err)
		}
		fmt.Fprintf(out, "## hash-max-listpack-value %s\n\n", strings.TrimSpace(lp))
		for _, p := range paths {
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				return err
			}
			e, err := newEnv(ctx, rdb, fake, slackURL)
			if err != nil {
				return err
			}
			m, err := measure(ctx, rdb, e.prefix, *n, func() error { return p.create(ctx, e, *n) })
			if os.Getenv("REDISMEM_DUMP") != "" {
				dumpOne(ctx, out, rdb, e.prefix)
			}
			e.close()
			if err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			noTTL += m.print(out, p.name)
		}
	}
	if noTTL > 0 {
		return fmt.Errorf("%d keys without a TTL", noTTL)
	}
	return nil
}

// printServer prints the Redis version and the settings that decide the
// keys' encodings.
func printServer(ctx context.Context, out io.Writer, rdb redisClient) error {
	info, err := rdb.InfoMap(ctx, "server").Result()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "redis-server %s (as started)", info["Server"]["redis_version"])
	for _, k := range []string{"hash-max-listpack-entries", "hash-max-listpack-value", "zset-max-listpack-entries", "stream-node-max-bytes", "stream-node-max-entries"} {
		v, err := rdb.ConfigGet(ctx, k).Result()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, ", %s %s", k, v[k])
	}
	fmt.Fprintf(out, "\nmeasured %s\n\n", time.Now().UTC().Format(time.RFC3339))
	return nil
}

// dumpOne prints one key of each kind, for a look at what is stored
// (REDISMEM_DUMP=1).
func dumpOne(ctx context.Context, out io.Writer, rdb redisClient, prefix string) {
	seen := map[string]bool{}
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		p := pattern(k[len(prefix):])
		if seen[p] {
			continue
		}
		seen[p] = true
		enc, _ := rdb.ObjectEncoding(ctx, k).Result()
		fmt.Fprintf(out, "--- %s (%s)\n", k, enc)
		switch typ, _ := rdb.Type(ctx, k).Result(); typ {
		case "hash":
			for f, v := range rdb.HGetAll(ctx, k).Val() {
				fmt.Fprintf(out, "  %s = %q\n", f, v)
			}
		case "string":
			v := rdb.Get(ctx, k).Val()
			fmt.Fprintf(out, "  %d bytes: %q\n", len(v), v)
		case "stream":
			for _, m := range rdb.XRevRangeN(ctx, k, "+", "-", 1).Val() {
				fmt.Fprintf(out, "  %v\n", m.Values)
			}
		}
	}
}
