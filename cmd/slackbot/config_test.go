package main

import (
	"strings"
	"testing"
)

// loadConfig reads getenv, never the process environment: a variable set
// in the process but not in getenv is not seen.
func TestLoadConfigReadsGetenvOnly(t *testing.T) {
	// Not parallel: it sets the process environment (t.Setenv).
	t.Setenv("ADDR", "nonsense")
	t.Setenv("LOG_LEVEL", "loud")
	cfg, err := loadConfig(getenvOf(map[string]string{"API_MAX_OPEN": "7", "API_KEYS": "a=0123456789abcdef0123,b=fedcba9876543210fedc"}), ModeDev)
	if err != nil {
		t.Fatalf("loadConfig read the process environment: %v", err)
	}
	if cfg.Addr != ":8080" || cfg.LogLevel != "info" || cfg.APIMaxOpen != 7 || cfg.APIRate != 20 || len(cfg.APIKeys) != 2 {
		t.Errorf("got Addr %q, LogLevel %q, APIMaxOpen %d, APIRate %v, %d API keys; want the defaults, 7 and 2",
			cfg.Addr, cfg.LogLevel, cfg.APIMaxOpen, cfg.APIRate, len(cfg.APIKeys))
	}
}

// Every variable that does not parse is named in one message, with the
// problems of the others.
func TestLoadConfigNamesEveryUnparsableVariable(t *testing.T) {
	t.Parallel()
	_, err := loadConfig(getenvOf(map[string]string{"API_MAX_OPEN": "many", "API_RATE": "fast", "LOG_FORMAT": "xml"}), ModeDev)
	if err == nil {
		t.Fatal("loadConfig accepted API_MAX_OPEN=many")
	}
	for _, want := range []string{"API_MAX_OPEN: converting 'many' to type int", "API_RATE", "'fast'", "LOG_FORMAT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s:\n%v", want, err)
		}
	}
	// The default stands in for a value that does not parse: no second
	// complaint about API_MAX_OPEN being 0.
	if strings.Contains(err.Error(), "at least 1") {
		t.Errorf("the unparsable API_MAX_OPEN is also reported as 0:\n%v", err)
	}
}

// A bad receipt key is named, never quoted; a previous key needs a
// current one.
func TestLoadConfigReceiptKeys(t *testing.T) {
	t.Parallel()
	secretish := "c2VjcmV0LXNlZWQtdGhhdC1pcy10b28tc2hvcnQ"
	_, err := loadConfig(getenvOf(map[string]string{"RECEIPT_KEY": secretish, "RECEIPT_KEY_PREVIOUS": "%%%"}), ModeDev)
	if err == nil {
		t.Fatal("loadConfig took a 29-byte RECEIPT_KEY")
	}
	for _, want := range []string{"RECEIPT_KEY: an Ed25519 seed is 32 bytes", "RECEIPT_KEY_PREVIOUS: not base64"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), secretish) {
		t.Errorf("the error quotes the key:\n%v", err)
	}
	_, err = loadConfig(getenvOf(map[string]string{"RECEIPT_KEY_PREVIOUS": receiptSeed("o")}), ModeDev)
	if err == nil || !strings.Contains(err.Error(), "RECEIPT_KEY is not") {
		t.Errorf("RECEIPT_KEY_PREVIOUS alone: %v", err)
	}
	if _, err := loadConfig(getenvOf(map[string]string{"RECEIPT_KEY": receiptSeed("n"), "RECEIPT_KEY_PREVIOUS": receiptSeed("o")}), ModeDev); err != nil {
		t.Errorf("good keys: %v", err)
	}
	// serve refuses .env.example's keys.
	example := map[string]string{"RECEIPT_KEY": "RVhBTVBMRS1PTkxZLXJlY2VpcHQta2V5LUNIQU5HRSE="}
	if _, err := loadConfig(getenvOf(example), ModeServe); err == nil || !strings.Contains(err.Error(), "RECEIPT_KEY is the example") {
		t.Errorf("serve with the example RECEIPT_KEY: %v", err)
	}
	if _, err := loadConfig(getenvOf(example), ModeDev); err != nil {
		t.Errorf("dev with the example RECEIPT_KEY: %v", err)
	}
}

// REDIS_URL takes one server or Sentinels; a bad one is named with its
// problem, never with its password.
func TestLoadConfigRedisURL(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{
		"redis://localhost:6379/0",
		"rediss://:pw@redis.example:6380/0",
		"redis+sentinel://s1:26379,s2:26379,s3:26379/mymaster/0",
		"rediss+sentinel://:pw@s1:26379/mymaster?sentinel_password=spw",
	} {
		if _, err := loadConfig(getenvOf(map[string]string{"REDIS_URL": ok}), ModeDev); err != nil {
			t.Errorf("REDIS_URL=%s: %v", ok, err)
		}
	}
	_, err := loadConfig(getenvOf(map[string]string{"REDIS_URL": "redis+sentinel://:hunter22@s1:26379"}), ModeDev)
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL") || !strings.Contains(err.Error(), "master name") {
		t.Errorf("REDIS_URL without a master name: %v, want a problem naming REDIS_URL and the master name", err)
	}
	if err != nil && strings.Contains(err.Error(), "hunter22") {
		t.Errorf("the error repeats the password:\n%v", err)
	}
}

// REDIS_WAIT_REPLICAS is a count of replicas: not negative, and not
// without a Redis that can have replicas.
func TestLoadConfigRedisWaitReplicas(t *testing.T) {
	t.Parallel()
	cfg, err := loadConfig(getenvOf(map[string]string{"REDIS_URL": "redis://r:6379/0", "REDIS_WAIT_REPLICAS": "1"}), ModeDev)
	if err != nil || cfg.RedisWaitReplicas != 1 {
		t.Fatalf("REDIS_WAIT_REPLICAS=1: %v, %+v", err, cfg)
	}
	for env, want := range map[string]string{"-1": "REDIS_WAIT_REPLICAS must be 0 or more", "2": "REDIS_WAIT_REPLICAS needs REDIS_URL"} {
		vars := map[string]string{"REDIS_WAIT_REPLICAS": env}
		if env == "-1" {
			vars["REDIS_URL"] = "redis://r:6379/0"
		}
		if _, err := loadConfig(getenvOf(vars), ModeDev); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("REDIS_WAIT_REPLICAS=%s: %v, want %q", env, err, want)
		}
	}
}

// The README's Configuration table names every variable Config reads,
// with its default, and no variable Config does not read (but OTEL_*,
// which loadTracing reads).
func TestReadmeConfigurationTable(t *testing.T) {
	t.Parallel()
	section := docSection(t, readDoc(t, "../../README.md"), "## Configuration")
	vars := configVars(t)
	documented := map[string]string{} // variable → its row's default column
	for line := range strings.Lines(section) {
		cols := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cols) < 3 {
			continue
		}
		for _, name := range strings.Split(strings.TrimPrefix(cols[0], "| "), ", ") {
			name = strings.Trim(name, "`")
			if _, ok := vars[name]; !ok && !strings.HasPrefix(name, "OTEL_") {
				t.Errorf("the README's Configuration table documents %s, which Config does not read", name)
			}
			documented[name] = strings.Trim(cols[len(cols)-1], " |\n")
		}
	}
	for name, def := range vars {
		row, ok := documented[name]
		switch {
		case !ok:
			t.Errorf("the README's Configuration table does not document %s", name)
		case def != "" && !strings.Contains(row, "`"+def+"`"):
			t.Errorf("the README's Configuration table gives %s the default %q, want `%s`", name, row, def)
		}
	}
}
