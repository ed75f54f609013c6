package main

import (
	"strings"
	"testing"
)

// loadConfig reads getenv, never the process environment: a variable set
// in the process but not in getenv is not seen.
func TestLoadConfigReadsGetenvOnly(t *testing.T) {
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
// problems of the others (envconfig.Process stops at the first).
func TestLoadConfigNamesEveryUnparsableVariable(t *testing.T) {
	_, err := loadConfig(getenvOf(map[string]string{"API_MAX_OPEN": "many", "API_RATE": "fast", "LOG_FORMAT": "xml"}), ModeDev)
	if err == nil {
		t.Fatal("loadConfig accepted API_MAX_OPEN=many")
	}
	for _, want := range []string{"API_MAX_OPEN", "'many'", "API_RATE", "'fast'", "LOG_FORMAT"} {
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
