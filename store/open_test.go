package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

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
