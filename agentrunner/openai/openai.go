package openai

import (
	"context"
	"net/http"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/agentrunner/internal/provider"
)

// DefaultBaseURL is OpenAI's API, used when no base URL is given.
const DefaultBaseURL = "https://api.openai.com/v1/"

// DefaultMaxRetries is how many times a failed request is retried when
// WithMaxRetries is not given: three attempts in all.
const DefaultMaxRetries = 2

// providerName names the API in errors and in String.
const providerName = "openai"

// Model is an agentrunner.Model that asks a chat model through the Chat
// Completions API. It is safe for concurrent use.
type Model struct {
	// id names the model and makes its errors, without the API key.
	id          *provider.Model
	chat        sdk.ChatCompletionService
	temperature *float64
	maxTokens   int64
}

var _ agentrunner.Model = (*Model)(nil)

// config collects the options before the client is built.
type config struct {
	apiKey      string
	baseURL     string
	httpClient  *http.Client
	maxRetries  int
	timeout     time.Duration
	temperature *float64
	maxTokens   int64
}

// Option configures a Model.
type Option func(*config)

// WithAPIKey sets the key sent as a bearer token. OpenAI needs one; most
// local servers accept any, or none.
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithBaseURL sets the API's base URL, up to and including the version path
// (e.g. http://localhost:11434/v1 for Ollama); requests go to
// <base>/chat/completions. Empty means DefaultBaseURL.
func WithBaseURL(u string) Option { return func(c *config) { c.baseURL = u } }

// WithHTTPClient sets the HTTP client; nil means a new client with
// http.DefaultTransport.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithMaxRetries sets how many times a request that failed with 408, 409,
// 429, 5xx or a connection error is retried, with backoff; default
// DefaultMaxRetries. Negative values count as 0.
func WithMaxRetries(n int) Option { return func(c *config) { c.maxRetries = max(n, 0) } }

// WithTimeout bounds each attempt of a request; retries get a fresh
// timeout. Zero (the default) leaves only the caller's context.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithTemperature sets the sampling temperature; unset leaves the server's
// default.
func WithTemperature(t float64) Option { return func(c *config) { c.temperature = &t } }

// WithMaxTokens bounds the tokens of each response (max_completion_tokens);
// zero (the default) leaves the server's default.
func WithMaxTokens(n int64) Option { return func(c *config) { c.maxTokens = n } }

// New returns a Model that asks model (e.g. "gpt-4o-mini", or "llama3.1" on
// Ollama). It does not contact the server; a bad key or URL shows in the
// first request's error.
func New(model string, opts ...Option) *Model {
	cfg := config{maxRetries: DefaultMaxRetries}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.baseURL == "" {
		cfg.baseURL = DefaultBaseURL
	}
	if cfg.httpClient == nil {
		cfg.httpClient = &http.Client{}
	}
	// The service is built from explicit options only: the SDK's client
	// constructor would also read OPENAI_* variables, and configuration
	// belongs to the caller.
	ropts := []option.RequestOption{
		option.WithBaseURL(cfg.baseURL),
		option.WithHTTPClient(cfg.httpClient),
		option.WithMaxRetries(cfg.maxRetries),
		option.WithMiddleware(normalizeErrors),
	}
	if cfg.apiKey != "" {
		ropts = append(ropts, option.WithAPIKey(cfg.apiKey))
	}
	if cfg.timeout > 0 {
		ropts = append(ropts, option.WithRequestTimeout(cfg.timeout))
	}
	return &Model{
		id:          provider.NewModel(providerName, model, cfg.apiKey, newAPIError),
		chat:        sdk.NewChatCompletionService(ropts...),
		temperature: cfg.temperature,
		maxTokens:   cfg.maxTokens,
	}
}

// String returns "openai:<model>", as slackbot's MODEL names it.
func (m *Model) String() string { return m.id.String() }

// GoString is String, so that %#v cannot print the client's settings.
func (m *Model) GoString() string { return m.String() }

// Request implements agentrunner.Model with one chat completion. Errors
// name the provider and the model; an HTTP error after retries is an
// *APIError, an answer without text or tool calls ErrEmptyResponse.
func (m *Model) Request(ctx context.Context, messages []agentrunner.Message, params agentrunner.RequestParams) (agentrunner.Message, error) {
	body, err := m.newParams(messages, params)
	if err != nil {
		return agentrunner.Message{}, m.id.Fail(err)
	}
	return provider.Send(ctx, m.id, m.chat.New, body, fromCompletion)
}

// newParams builds the request body.
func (m *Model) newParams(messages []agentrunner.Message, params agentrunner.RequestParams) (sdk.ChatCompletionNewParams, error) {
	msgs, err := toMessages(messages, params.Instructions)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	tools, err := toTools(params.Tools)
	if err != nil {
		return sdk.ChatCompletionNewParams{}, err
	}
	body := sdk.ChatCompletionNewParams{Model: m.id.Name(), Messages: msgs, Tools: tools}
	if m.temperature != nil {
		body.Temperature = sdk.Float(*m.temperature)
	}
	if m.maxTokens > 0 {
		body.MaxCompletionTokens = sdk.Int(m.maxTokens)
	}
	return body, nil
}
