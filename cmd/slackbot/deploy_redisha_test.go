package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/store"
)

// redisChartValues is the part of the bitnami/redis chart's values that
// slackbot depends on.
type redisChartValues struct {
	FullnameOverride string `yaml:"fullnameOverride"`
	Architecture     string `yaml:"architecture"`
	Auth             struct {
		Enabled                   bool   `yaml:"enabled"`
		Sentinel                  bool   `yaml:"sentinel"`
		ExistingSecret            string `yaml:"existingSecret"`
		ExistingSecretPasswordKey string `yaml:"existingSecretPasswordKey"`
	} `yaml:"auth"`
	CommonConfiguration string `yaml:"commonConfiguration"`
	Replica             struct {
		ReplicaCount int `yaml:"replicaCount"`
		Persistence  struct {
			Enabled bool `yaml:"enabled"`
		} `yaml:"persistence"`
	} `yaml:"replica"`
	Sentinel struct {
		Enabled   bool   `yaml:"enabled"`
		MasterSet string `yaml:"masterSet"`
		Quorum    int    `yaml:"quorum"`
	} `yaml:"sentinel"`
}

// The Kubernetes example of Redis with failover (bitnami/redis values):
// Sentinel mode with a majority quorum of three, persistence, the password
// from the Secret secret.yaml defines, and a REDIS_URL that names the
// chart's Sentinel Service and master set, which store.Open accepts.
func TestKubeRedisSentinelValues(t *testing.T) {
	t.Parallel()
	file := filepath.Join(deployDir, "kubernetes", "redis-sentinel", "values.yaml")
	var v redisChartValues
	decodeYAML(t, file, yamlDocs(t, file)[0], &v)
	if v.Architecture != "replication" || !v.Sentinel.Enabled || v.Replica.ReplicaCount < 3 || v.Sentinel.Quorum != v.Replica.ReplicaCount/2+1 {
		t.Errorf("architecture %q, sentinel %v, %d pods, quorum %d: want replication with Sentinels, 3+ pods and a majority quorum",
			v.Architecture, v.Sentinel.Enabled, v.Replica.ReplicaCount, v.Sentinel.Quorum)
	}
	for _, want := range []string{"appendonly yes", "appendfsync everysec", "maxmemory-policy noeviction"} {
		if !strings.Contains(v.CommonConfiguration, want) {
			t.Errorf("commonConfiguration lacks %q", want)
		}
	}
	if !v.Replica.Persistence.Enabled {
		t.Error("replica persistence is off: a restarted pod would come back empty")
	}
	if !v.Auth.Enabled || !v.Auth.Sentinel {
		t.Error("auth: want a password on Redis and on the Sentinels")
	}
	objs, _ := kubeObjects(t)
	secret := &struct {
		StringData map[string]string `yaml:"stringData"`
	}{}
	kubeSpec(t, objs, "Secret/"+v.Auth.ExistingSecret, secret)
	if _, ok := secret.StringData[v.Auth.ExistingSecretPasswordKey]; !ok {
		t.Errorf("Secret %s has no key %s", v.Auth.ExistingSecret, v.Auth.ExistingSecretPasswordKey)
	}

	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`REDIS_URL: (\S+)`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("values.yaml does not say which REDIS_URL to set")
	}
	u := string(m[1])
	if want := "@" + v.FullnameOverride + ":26379/" + v.Sentinel.MasterSet + "/0"; !strings.Contains(u, want) {
		t.Errorf("REDIS_URL %s does not name the chart's Sentinel Service and master set (%s)", u, want)
	}
	if err := store.CheckURL(u); err != nil {
		t.Errorf("store.Open refuses REDIS_URL %s: %v", u, err)
	}
	if !strings.Contains(string(raw), `REDIS_WAIT_REPLICAS: "1"`) {
		t.Error("values.yaml does not tell to set REDIS_WAIT_REPLICAS")
	}
}
