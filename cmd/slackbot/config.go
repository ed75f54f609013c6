package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/store"
)

// Config is slackbot's configuration, read from the environment variables
// the README's Configuration section and .env.example name. Every field's
// env tag is the variable's exact name, its default tag the value an unset
// (or empty) variable takes.
type Config struct {
	SlackBotToken      string   `env:"SLACK_BOT_TOKEN"`
	SlackSigningSecret string   `env:"SLACK_SIGNING_SECRET"`
	SlackAppToken      string   `env:"SLACK_APP_TOKEN"`
	SlackAPIURL        string   `env:"SLACK_API_URL" default:"https://slack.com/api/"`
	RedisURL           string   `env:"REDIS_URL"`
	RedisWaitReplicas  int      `env:"REDIS_WAIT_REPLICAS" default:"0"`
	RoutesFile         string   `env:"ROUTES_FILE"`
	Addr               string   `env:"ADDR" default:":8080"`
	TLSCertFile        string   `env:"TLS_CERT_FILE"`
	TLSKeyFile         string   `env:"TLS_KEY_FILE"`
	Model              string   `env:"MODEL" default:"test"`
	OpenAIAPIKey       string   `env:"OPENAI_API_KEY"`
	OpenAIBaseURL      string   `env:"OPENAI_BASE_URL"`
	AnthropicAPIKey    string   `env:"ANTHROPIC_API_KEY"`
	Tools              string   `env:"TOOLS"`
	APIKeys            []string `env:"API_KEYS"`
	APIMaxOpen         int      `env:"API_MAX_OPEN" default:"1000"`
	APIRate            float64  `env:"API_RATE" default:"20"`
	PublicURL          string   `env:"PUBLIC_URL"`
	ReceiptKey         string   `env:"RECEIPT_KEY"`
	ReceiptKeyPrevious string   `env:"RECEIPT_KEY_PREVIOUS"`
	LogLevel           string   `env:"LOG_LEVEL" default:"info"`
	LogFormat          string   `env:"LOG_FORMAT" default:"json"`
}

// Mode is the subcommand a configuration is checked for.
type Mode string

// Modes.
const (
	ModeServe Mode = "serve"
	ModeDev   Mode = "dev"
)

// ConfigError lists every problem of a configuration, so one start-up
// names them all.
type ConfigError struct {
	Problems []string
}

func (e *ConfigError) Error() string {
	return "invalid configuration:\n  - " + strings.Join(e.Problems, "\n  - ")
}

// loadConfig reads the configuration from getenv and checks it for mode.
// run passes os.Getenv; tests pass a map's lookup, so nothing below run
// reads the process environment.
func loadConfig(getenv func(string) string, mode Mode) (*Config, error) {
	var cfg Config
	problems, err := readEnv(getenv, &cfg)
	if err != nil {
		return nil, err
	}
	var invalid *ConfigError
	if errors.As(cfg.validate(mode), &invalid) {
		problems = append(problems, invalid.Problems...)
	}
	// The OTEL_* variables are read apart (loadTracing, by wire), and
	// checked here so that one message names every bad variable.
	if _, err := loadTracing(getenv); errors.As(err, &invalid) {
		problems = append(problems, invalid.Problems...)
	}
	if len(problems) > 0 {
		return nil, &ConfigError{Problems: problems}
	}
	return &cfg, nil
}

// readEnv fills cfg from getenv, field by field, by its env and default
// tags, and returns a problem for every variable that does not parse, so
// one start-up names them all. getenv cannot tell an empty variable from
// an unset one, so an empty variable takes the default.
//
// It is this small reader rather than a library such as envconfig, which
// reads only the process environment: run is given getenv, and nothing
// below it reads the process environment. The tags are read with reflect
// alone; a text/template over them would make the linker keep every
// exported method of every type (8 MB more code in the binary).
func readEnv(getenv func(string) string, cfg *Config) ([]string, error) {
	v := reflect.ValueOf(cfg).Elem()
	t := v.Type()
	var problems []string
	for i := range t.NumField() {
		f := t.Field(i)
		key, def := f.Tag.Get("env"), f.Tag.Get("default")
		if key == "" {
			return nil, fmt.Errorf("configuration field %s has no env tag", f.Name)
		}
		value := getenv(key)
		if value == "" {
			value = def
		}
		if value == "" {
			continue
		}
		field := v.Field(i)
		if err := setField(field, value); err != nil {
			problems = append(problems, fmt.Sprintf("%s: converting '%s' to type %s: %v", key, value, field.Type(), err))
			// The default stands in, so validate names only other problems.
			_ = setField(field, def)
		}
	}
	return problems, nil
}

// setField parses value into field: a number in Go syntax, a list split
// at commas.
func setField(field reflect.Value, value string) error {
	switch field.Kind() {
	case reflect.String:
		field.SetString(value)
	case reflect.Int:
		n, err := strconv.ParseInt(value, 0, field.Type().Bits())
		if err != nil {
			return err
		}
		field.SetInt(n)
	case reflect.Float64:
		f, err := strconv.ParseFloat(value, field.Type().Bits())
		if err != nil {
			return err
		}
		field.SetFloat(f)
	case reflect.Slice:
		if field.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported type %s", field.Type())
		}
		if strings.TrimSpace(value) != "" {
			field.Set(reflect.ValueOf(strings.Split(value, ",")))
		}
	default:
		return fmt.Errorf("unsupported type %s", field.Type())
	}
	return nil
}

// validate checks the configuration for mode and names every problem.
func (c *Config) validate(mode Mode) error {
	var p problems
	c.checkSlack(&p, mode)
	c.checkServer(&p)
	c.checkModel(&p)
	c.checkRest(&p, mode)
	if len(p) > 0 {
		return &ConfigError{Problems: p}
	}
	return nil
}

// problems collects what is wrong with a configuration.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// checkSlack checks the Slack tokens, secret and API URL.
func (c *Config) checkSlack(p *problems, mode Mode) {
	if mode == ModeServe {
		switch {
		case c.SlackBotToken == "":
			p.add("SLACK_BOT_TOKEN is required (a bot token, xoxb-…)")
		case !strings.HasPrefix(c.SlackBotToken, "xoxb-"):
			p.add("SLACK_BOT_TOKEN must be a bot token starting with xoxb-")
		}
		if c.SlackAppToken == "" && c.SlackSigningSecret == "" {
			p.add("SLACK_SIGNING_SECRET is required to verify requests from Slack (or set SLACK_APP_TOKEN for Socket Mode)")
		}
	}
	if c.SlackAppToken != "" && !strings.HasPrefix(c.SlackAppToken, "xapp-") {
		p.add("SLACK_APP_TOKEN must be an app-level token starting with xapp-")
	}
	if u, err := url.Parse(c.SlackAPIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || !strings.HasSuffix(c.SlackAPIURL, "/") {
		p.add("SLACK_API_URL must be an http(s) URL ending with / (got %q)", c.SlackAPIURL)
	}
}

// checkServer checks Redis, the routing file, the address and TLS.
func (c *Config) checkServer(p *problems) {
	if c.RedisURL != "" {
		// CheckURL's errors never repeat a password.
		if err := store.CheckURL(c.RedisURL); err != nil {
			p.add("REDIS_URL must be a redis://, rediss://, redis+sentinel:// or redis+cluster:// URL: %v", err)
		}
	}
	switch {
	case c.RedisWaitReplicas < 0:
		p.add("REDIS_WAIT_REPLICAS must be 0 or more (got %d)", c.RedisWaitReplicas)
	case c.RedisWaitReplicas > 0 && c.RedisURL == "":
		p.add("REDIS_WAIT_REPLICAS needs REDIS_URL: the embedded Redis has no replicas")
	}
	if c.RoutesFile != "" {
		if _, err := os.Stat(c.RoutesFile); err != nil {
			p.add("ROUTES_FILE %q cannot be read: %v", c.RoutesFile, errors.Unwrap(err))
		}
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		p.add("ADDR must be host:port or :port (got %q)", c.Addr)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		p.add("TLS_CERT_FILE and TLS_KEY_FILE must be set together")
	}
	for _, f := range []struct{ name, path string }{{"TLS_CERT_FILE", c.TLSCertFile}, {"TLS_KEY_FILE", c.TLSKeyFile}} {
		if f.path != "" {
			if _, err := os.Stat(f.path); err != nil {
				p.add("%s %q cannot be read", f.name, f.path)
			}
		}
	}
}

// checkModel checks MODEL and what its provider needs.
func (c *Config) checkModel(p *problems) {
	provider, name, _ := strings.Cut(c.Model, ":")
	switch provider {
	case "test", "demo":
	case "openai":
		if name == "" {
			p.add("MODEL openai:<model> needs a model name, e.g. openai:gpt-4o-mini")
		}
		if c.OpenAIAPIKey == "" && c.OpenAIBaseURL == "" {
			p.add("MODEL %s needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local OpenAI-compatible server)", c.Model)
		}
	case "anthropic":
		if name == "" {
			p.add("MODEL anthropic:<model> needs a model name, e.g. anthropic:claude-sonnet-4-5")
		}
		if c.AnthropicAPIKey == "" {
			p.add("MODEL %s needs ANTHROPIC_API_KEY", c.Model)
		}
	default:
		p.add("MODEL must be test, test:tool_a,tool_b, demo, openai:<model> or anthropic:<model> (got %q)", c.Model)
	}
	if c.OpenAIBaseURL != "" {
		if u, err := url.Parse(c.OpenAIBaseURL); err != nil || u.Host == "" {
			p.add("OPENAI_BASE_URL must be a URL")
		}
	}
}

// checkRest checks the tools, the HTTP API, the public URL, the receipt
// keys and logging.
func (c *Config) checkRest(p *problems, mode Mode) {
	if c.Tools != "" && c.Tools != "demo" {
		p.add("TOOLS must be empty or demo (got %q)", c.Tools)
	}
	if len(c.APIKeys) > 0 {
		// ParseKeys names a bad entry by its position, never by its value.
		if _, err := httpapi.ParseKeys(strings.Join(c.APIKeys, ",")); err != nil {
			p.add("API_KEYS: %v", err)
		}
	}
	if c.APIMaxOpen < 1 {
		p.add("API_MAX_OPEN must be at least 1 (got %d)", c.APIMaxOpen)
	}
	if !(c.APIRate > 0) || math.IsInf(c.APIRate, 0) {
		p.add("API_RATE must be a number of requests per second above 0 (got %v)", c.APIRate)
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			p.add("PUBLIC_URL must be an http(s) URL")
		}
	}
	// ParseSeed's errors never quote the seed.
	for name, seed := range map[string]string{"RECEIPT_KEY": c.ReceiptKey, "RECEIPT_KEY_PREVIOUS": c.ReceiptKeyPrevious} {
		switch _, err := receipt.ParseSeed(seed); {
		case seed == "":
		case err != nil:
			p.add("%s: %v", name, err)
		case mode == ModeServe && isExampleSeed(seed):
			p.add("%s is the example from .env.example: generate your own with `openssl rand -base64 32`", name)
		}
	}
	if c.ReceiptKeyPrevious != "" && c.ReceiptKey == "" {
		p.add("RECEIPT_KEY_PREVIOUS is set but RECEIPT_KEY is not: set the new key in RECEIPT_KEY")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		p.add("LOG_LEVEL must be debug, info, warn or error (got %q)", c.LogLevel)
	}
	switch c.LogFormat {
	case "json", "text":
	default:
		p.add("LOG_FORMAT must be json or text (got %q)", c.LogFormat)
	}
}

// isExampleSeed reports whether seed is one of .env.example's receipt
// keys, whose bytes spell EXAMPLE-ONLY-….
func isExampleSeed(seed string) bool {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(seed))
	return err == nil && strings.HasPrefix(string(b), "EXAMPLE-ONLY-")
}
