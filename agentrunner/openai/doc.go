// Package openai is an agentrunner.Model backed by OpenAI's Chat Completions
// API, through github.com/openai/openai-go/v3.
//
// Chat Completions is the API that OpenAI-compatible servers (Ollama, vLLM,
// LiteLLM, LM Studio, llama.cpp's server) implement, so one Model serves them
// all: point WithBaseURL at the server.
//
// The run's history maps onto chat messages as Pydantic AI maps it: the
// instructions and system-prompt parts become system messages, user prompts
// user messages, the model's text and tool calls assistant messages with
// tool_calls, and tool returns (including denials and failures, whose content
// already says so) tool messages answering their tool_call_id. A retry prompt
// about a tool call becomes a tool message ending in "Fix the errors and try
// again."; one about no call a user message.
//
// Requests that fail with 408, 409, 429 or 5xx, or without a response, are
// retried with exponential backoff by the SDK, honouring the server's
// retry-after-ms and Retry-After headers. What still fails is an error that
// names the provider and the model and, for HTTP errors, an *APIError with
// the status and the provider's message, ready to show to a person:
//
//	openai gpt-4o-mini: 401 Unauthorized: Incorrect API key provided: sk-ab***yz.
//
// The API key never appears in an error, nor when a Model is printed.
//
// Configuration, as slackbot reads it from the environment:
//
//	MODEL=openai:gpt-4o-mini  OPENAI_API_KEY=sk-...
//
//	# Ollama (any non-empty key; Ollama ignores it)
//	MODEL=openai:llama3.1  OPENAI_BASE_URL=http://localhost:11434/v1  OPENAI_API_KEY=ollama
//
//	# vLLM
//	MODEL=openai:Qwen/Qwen2.5-7B-Instruct  OPENAI_BASE_URL=http://vllm:8000/v1  OPENAI_API_KEY=token
//
//	# LiteLLM proxy
//	MODEL=openai:claude-sonnet  OPENAI_BASE_URL=http://litellm:4000  OPENAI_API_KEY=sk-litellm-...
//
// which becomes
//
//	m := openai.New("llama3.1",
//		openai.WithAPIKey(os.Getenv("OPENAI_API_KEY")),
//		openai.WithBaseURL(os.Getenv("OPENAI_BASE_URL")))
//
// The package reads no environment variable itself.
package openai
