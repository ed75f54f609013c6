// Package fakemodel serves fake model APIs on loopback for the end-to-end
// tests that drive the real coding-agent CLIs (internal/agentcli): the
// Anthropic Messages API for Claude Code, the OpenAI Responses API for
// Codex and the Gemini API for Gemini CLI. Each fake speaks its API's
// streaming wire format closely enough for the CLI, plays a script of
// turns (text, or tool calls the test chooses) and records what the CLI
// sent back, so a test can see what the model was told (a tool's output,
// a denial's reason).
//
// It is for tests only.
package fakemodel
