package anthropic

import (
	"context"
	"net/http"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/internal/provider"
)

// DefaultMaxTokens bounds each response when WithMaxTokens is not given;
// the API requires a bound.
const DefaultMaxTokens = 4096

// DefaultMaxRetries is how many times a failed request is retried when
// WithMaxRetries is not given: three attempts in all.
const DefaultMaxRetries = 2

// providerName names the API in errors and in String.
const providerName = "anthropic"

// Model is an agentrunner.Model that asks a Claude model through the
// Messages API. It is safe for concurrent use.
type Model struct {
	// id names the model and makes its errors, without the API key.
	id        *provider.Model
	messages  sdk.MessageService
	maxTokens int64
}

var _ agentrunner.Model = (*Model)(nil)

// config collects the options before the client is built.
type config struct {
	apiKey     string
	baseURL    string
	httpClient *http.Client
	maxRetries int
	timeout    time.Duration
	maxTokens  int64
}

// Option configures a Model.
type Option func(*config)

// WithAPIKey sets the API key.
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithBaseURL sets the API's base URL, without the version path (requests
// go to <base>/v1/messages), e.g. for a gateway. Empty means Anthropic's
// API.
func WithBaseURL(u string) Option { return func(c *config) { c.baseURL = u } }

// WithHTTPClient sets the HTTP client; nil means a new client with
// http.DefaultTransport.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithMaxRetries sets how many times a request that failed with 408, 409,
// 429, 5xx or a connection error is retried, with backoff; default
// DefaultMaxRetries. Negative values count as 0.
func WithMaxRetries(n int) Option { return func(c *config) { c.maxRetries = max(n, 0) } }

// WithTimeout bounds each attempt of a request; retries get a fresh
// timeout. Zero (the default) leaves the SDK's, ten minutes for the
// default max tokens.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithMaxTokens bounds the tokens of each response; zero or less means
// DefaultMaxTokens.
func WithMaxTokens(n int64) Option { return func(c *config) { c.maxTokens = n } }

// New returns a Model that asks model (e.g. "claude-sonnet-4-5"). It does
// not contact the API; a bad key shows in the first request's error.
func New(model string, opts ...Option) *Model {
	cfg := config{maxRetries: DefaultMaxRetries}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.httpClient == nil {
		cfg.httpClient = &http.Client{}
	}
	if cfg.maxTokens <= 0 {
		cfg.maxTokens = DefaultMaxTokens
	}
	// Configuration belongs to the caller: without this the SDK would read
	// ANTHROPIC_* variables and credential files.
	ropts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(cfg.httpClient),
		option.WithMaxRetries(cfg.maxRetries),
	}
	if cfg.baseURL != "" {
		ropts = append(ropts, option.WithBaseURL(cfg.baseURL))
	}
	if cfg.apiKey != "" {
		ropts = append(ropts, option.WithAPIKey(cfg.apiKey))
	}
	if cfg.timeout > 0 {
		ropts = append(ropts, option.WithRequestTimeout(cfg.timeout))
	}
	return &Model{
		id:        provider.NewModel(providerName, model, cfg.apiKey, newAPIError),
		messages:  sdk.NewClient(ropts...).Messages,
		maxTokens: cfg.maxTokens,
	}
}

// String returns "anthropic:<model>", as slackbot's MODEL names it.
func (m *Model) String() string { return m.id.String() }

// GoString is String, so that %#v cannot print the client's settings.
func (m *Model) GoString() string { return m.String() }

// Request implements agentrunner.Model with one Messages API call. Errors
// name the provider and the model; an HTTP error after retries is an
// *APIError, an answer without text or tool calls ErrEmptyResponse.
func (m *Model) Request(ctx context.Context, messages []agentrunner.Message, params agentrunner.RequestParams) (agentrunner.Message, error) {
	body, err := m.newParams(messages, params)
	if err != nil {
		return agentrunner.Message{}, m.id.Fail(err)
	}
	return provider.Send(ctx, m.id, m.messages.New, body, fromMessage)
}

// newParams builds the request body.
func (m *Model) newParams(messages []agentrunner.Message, params agentrunner.RequestParams) (sdk.MessageNewParams, error) {
	system, turns, err := toMessages(messages, params.Instructions)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	tools, err := toTools(params.Tools)
	if err != nil {
		return sdk.MessageNewParams{}, err
	}
	body := sdk.MessageNewParams{Model: sdk.Model(m.id.Name()), MaxTokens: m.maxTokens, Messages: turns, Tools: tools}
	if system != "" {
		body.System = []sdk.TextBlockParam{{Text: system}}
	}
	return body, nil
}
