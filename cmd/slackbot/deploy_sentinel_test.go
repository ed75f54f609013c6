package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/store"
)

// composeDefault is what docker compose makes of a value that is one
// ${NAME:-default} with NAME unset: the default; any other value as is.
func composeDefault(v string) string {
	if m := regexp.MustCompile(`^\$\{[A-Z0-9_]+:-(.*)\}$`).FindStringSubmatch(v); m != nil {
		return m[1]
	}
	return v
}

// The compose file's profile "sentinel": a replica of redis and three
// Sentinels monitoring it by name, only in that profile; the REDIS_URL the
// file tells to set names those Sentinels and the monitored primary, and
// store.Open accepts it.
func TestComposeSentinelProfile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(deployDir, "docker-compose.yml")
	var c composeFile
	decodeYAML(t, file, yamlDocs(t, file)[0], &c)
	for name, s := range c.Services {
		inProfile := slices.Contains(s.Profiles, "sentinel")
		if want := name == "redis-replica" || strings.HasPrefix(name, "sentinel-"); inProfile != want {
			t.Errorf("service %s: in profile sentinel %v, want %v", name, inProfile, want)
		}
	}
	replica := c.Services["redis-replica"]
	if cmd := strings.Join(replica.Command, " "); !strings.Contains(cmd, "--replicaof redis 6379") || !strings.Contains(cmd, "--appendonly yes") {
		t.Errorf("redis-replica command %q, want a replica of redis with AOF", cmd)
	}
	if !slices.ContainsFunc(replica.Volumes, func(v string) bool { return strings.HasSuffix(v, ":/data") }) {
		t.Errorf("redis-replica volumes %v: /data is not on a volume", replica.Volumes)
	}
	var sentinels []string
	for i := 1; i <= 3; i++ {
		name := "sentinel-" + string(rune('0'+i))
		s, ok := c.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		script := strings.Join(s.Command, " ")
		for _, want := range []string{"sentinel monitor slackbot redis 6379 2", "port 26379", "--sentinel", "sentinel resolve-hostnames yes"} {
			if !strings.Contains(script, want) {
				t.Errorf("%s command lacks %q: %s", name, want, script)
			}
		}
		if s.Hostname != name {
			t.Errorf("%s hostname %q, want %s (it announces itself by it)", name, s.Hostname, name)
		}
		sentinels = append(sentinels, name+":26379")
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`SLACKBOT_REDIS_URL=(\S+)`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("the compose file does not say which SLACKBOT_REDIS_URL the profile sentinel takes")
	}
	want := "redis+sentinel://" + strings.Join(sentinels, ",") + "/slackbot/0"
	if got := string(m[1]); got != want {
		t.Errorf("documented SLACKBOT_REDIS_URL %s, want %s", got, want)
	}
	if err := store.CheckURL(want); err != nil {
		t.Errorf("store.Open refuses %s: %v", want, err)
	}
	if got := c.Services["slackbot"].Environment["REDIS_URL"]; !strings.Contains(got, "${SLACKBOT_REDIS_URL:-") {
		t.Errorf("slackbot REDIS_URL %q does not take SLACKBOT_REDIS_URL", got)
	}
}
