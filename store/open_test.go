package store_test

import (
	"context"
	"fmt"
	"log"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackapprove/slackbot/store"
	"github.com/slackapprove/slackbot/store/redistest"
)

// CheckURL accepts every documented form of REDIS_URL and refuses the
// rest with an error that names the problem and never the password.
func TestCheckURL(t *testing.T) {
	const secret = "s3cr3t-pass"
	for _, tc := range []struct {
		url  string
		want string // substring of the error; "" accepts
	}{
		{url: "redis://localhost:6379/0"},
		{url: "rediss://user:" + secret + "@redis.example:6380/1"},
		{url: "redis+sentinel://h1:26379,h2:26379,h3:26379/mymaster"},
		{url: "redis+sentinel://h1:26379/mymaster/2"},
		{url: "redis+sentinel://default:" + secret + "@h1:26379,h2:26379/mymaster/0?sentinel_password=" + secret + "&dial_timeout=2s"},
		{url: "rediss+sentinel://h1:26379/mymaster?skip_verify=false"},
		{url: "redis+sentinel://h1:26379/mymaster?tls=true&sentinel_username=sentinel"},
		{url: "redis+cluster://n1:6379,n2:6379,n3:6379"},
		{url: "rediss+cluster://u:" + secret + "@n1:6379?read_timeout=2s"},
		{url: "redis+cluster://n1:6379/0", want: "no path"},
		{url: "redis+cluster://n1:6379?addr=n2:6379", want: "not as addr="},
		{url: "redis+cluster://n1,n2:6379", want: `"n1" is not host:port`},
		{url: "http://localhost:6379", want: `scheme "http"`},
		{url: "redis+sentinel://h1:26379", want: "/<master name>[/<db>]"},
		{url: "redis+sentinel://h1:26379/m/0/extra", want: "/<master name>[/<db>]"},
		{url: "redis+sentinel://h1:26379/mymaster/zero", want: `database "zero"`},
		{url: "redis+sentinel://h1,h2:26379/mymaster", want: `"h1" is not host:port`},
		{url: "redis+sentinel://h1:26379/mymaster?tls=maybe", want: `tls="maybe"`},
		{url: "redis+sentinel://h1:26379/mymaster?password=" + secret, want: "user:password@"},
		{url: "redis+sentinel://h1:26379/mymaster?bogus=1", want: "unexpected option: bogus"},
		{url: "redis+sentinel://u:" + secret + "@h1:x/mymaster", want: "invalid port"},
		{url: "redis://u:" + secret + "@h1:x/0", want: "invalid port"},
		{url: "redis://u:" + secret + "@h1:6379/0?dial_timeout=soon", want: "dial_timeout"},
	} {
		err := store.CheckURL(tc.url)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckURL(%q): %v, want nil", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckURL(%q): %v, want an error containing %q", tc.url, err, tc.want)
		case err != nil && strings.Contains(err.Error(), secret):
			t.Errorf("CheckURL(%q): %v repeats the password", tc.url, err)
		}
	}
}

// Open with a Sentinel URL finds the primary through the Sentinels and
// passes the servers' and the Sentinels' credentials to each.
func TestOpenSentinelWithPasswords(t *testing.T) {
	st := redistest.StartSentinel(t, redistest.SentinelOptions{Password: "data-pass", SentinelPassword: "sentinel-pass"})
	u := st.URL() + "&dial_timeout=2s"
	if !strings.Contains(u, ":data-pass@") || !strings.Contains(u, "sentinel_password=sentinel-pass") {
		t.Fatalf("URL %s lacks the credentials", u)
	}
	rdb := openURL(t, u)
	if err := rdb.Set(t.Context(), "k", "v", time.Minute).Err(); err != nil {
		t.Fatalf("write through the sentinel URL: %v", err)
	}
	if got := st.Primary(t).Client(t).Get(t.Context(), "k").Val(); got != "v" {
		t.Errorf("the primary holds k=%q, want v", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	wrong := strings.Replace(u, "sentinel_password=sentinel-pass", "sentinel_password=wrong-pass", 1)
	if _, _, err := store.Open(ctx, wrong); err == nil || strings.Contains(err.Error(), "wrong-pass") {
		t.Errorf("open with a wrong sentinel password: %v, want an error without the password", err)
	}
}

// No error of CheckURL or Open repeats any part of a password, whatever
// it holds: a /, ? or # in it makes net/url end the host early and put
// the rest of the password in the host, path or fragment, where the
// errors of net/url and go-redis quote it; a bad % escape is quoted by
// net/url's own error. Every three characters of the password are
// looked for, so a piece of it is caught as well as all of it.
func TestURLErrorsNeverRepeatThePassword(t *testing.T) {
	passwords := []string{
		"QXZK7/JQ9ZX", "1979/QXZKJ", "QXZK7?JQ9ZX", "1979?QXZKJ", "QXZK7#JQ9ZX", "1979#QXZKJ",
		"QXZK7@JQ9ZX", "QX@1979/ZKJ", "QXZK7%ZQJ9X", "QXZK7%2FJQ9", "%QXZK7", "QXZK7%", "QXZK7:JQ9ZX",
		"QX/?#@%ZKJ", "QX7 ZKJ9Q", "QX7,ZK:9/Q@J", "QX7&ZKJ=9",
	}
	forms := []string{
		"redis://localhost:%s@127.0.0.1:1/0",
		"rediss://localhost:%s@127.0.0.1:1/0",
		"redis://localhost:%s@127.0.0.1:x/0",
		"redis://localhost:%s@127.0.0.1:1/zero",
		"redis+sentinel://localhost:%s@127.0.0.1:1,127.0.0.1:2/mymaster/0",
		"redis+sentinel://localhost:%s@127.0.0.1:1/mymaster/zero",
		"rediss+sentinel://127.0.0.1:1/mymaster?sentinel_password=%s",
		"redis+cluster://localhost:%s@127.0.0.1:1,127.0.0.1:2",
		"redis+cluster://localhost:%s@127.0.0.1:1/0",
	}
	logs := captureRedisLogs(t)
	t.Run("urls", func(t *testing.T) {
		for _, form := range forms {
			for _, pw := range passwords {
				u := fmt.Sprintf(form, pw)
				t.Run(u, func(t *testing.T) {
					t.Parallel()
					err := store.CheckURL(u)
					if err == nil {
						// Open adds the address it could not reach (a
						// Sentinel client retries until the deadline).
						ctx, cancel := context.WithTimeout(t.Context(), time.Second)
						defer cancel()
						var closeRDB func() error
						if _, closeRDB, err = store.Open(ctx, u); err == nil {
							_ = closeRDB()
							t.Fatal("Open connected, want an error")
						}
					}
					if piece, ok := repeats(err.Error(), pw); ok {
						t.Errorf("the error repeats %q of the password:\n%v", piece, err)
					}
				})
			}
		}
	})
	// What go-redis logged while dialling (the address it dialled).
	for _, pw := range passwords {
		if piece, ok := repeats(logs.String(), pw); ok {
			t.Errorf("go-redis logged %q of the password %q", piece, pw)
		}
	}
}

// redisLogs collects what go-redis logs.
type redisLogs struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *redisLogs) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.buf, format+"\n", v...)
}

func (l *redisLogs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// captureRedisLogs sends go-redis's log to the returned collector until
// the test ends, then to stderr again.
func captureRedisLogs(t *testing.T) *redisLogs {
	t.Helper()
	logs := &redisLogs{}
	redis.SetLogger(logs)
	t.Cleanup(func() { redis.SetLogger(stderrLogger{log.New(os.Stderr, "redis: ", log.LstdFlags)}) })
	return logs
}

// stderrLogger is go-redis's default log, restored after captureRedisLogs.
type stderrLogger struct{ l *log.Logger }

func (s stderrLogger) Printf(_ context.Context, format string, v ...any) { s.l.Printf(format, v...) }

// repeats reports a piece of password (three characters or all of it,
// as written or escaped) that msg holds.
func repeats(msg, password string) (string, bool) {
	for _, whole := range []string{password, url.QueryEscape(password), url.PathEscape(password), url.UserPassword("u", password).String()} {
		if strings.Contains(msg, whole) {
			return whole, true
		}
	}
	for i := 0; i+3 <= len(password); i++ {
		if strings.Contains(msg, password[i:i+3]) {
			return password[i : i+3], true
		}
	}
	return "", false
}
