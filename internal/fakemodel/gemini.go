package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// This file is the Gemini API (generativelanguage.googleapis.com, v1beta)
// as Gemini CLI 0.61.0 calls it with an API key, observed with that
// version pointed at this fake by GOOGLE_GEMINI_BASE_URL:
//
//   - POST /v1beta/models/<model>:streamGenerateContent?alt=sse, the
//     agent's turns: a request of {contents: [{role, parts}], tools,
//     systemInstruction, generationConfig}, answered with server-sent
//     events, each "data: <GenerateContentResponse JSON>\n\n" (the SDK's
//     reader, responseLineRE in @google/genai, wants exactly that);
//   - POST /v1beta/models/<model>:generateContent, the CLI's side
//     questions (which model to route to, whether the model should speak
//     next), answered with a text the CLI cannot use, so it falls back to
//     its defaults;
//   - POST /v1beta/models/<model>:countTokens, answered with a count.
//
// Any other request is answered 404 and recorded, so a test sees it.

// GeminiTurn is one scripted answer of the model: a text, or a call of
// one of the CLI's tools (run_shell_command, write_file, replace, …).
type GeminiTurn struct {
	Text string
	// Call, when not empty, is the tool called with Args.
	Call string
	Args any
}

// GeminiText is a turn in which the model says text and ends.
func GeminiText(text string) GeminiTurn { return GeminiTurn{Text: text} }

// GeminiCall is a turn in which the model calls tool with args.
func GeminiCall(tool string, args any) GeminiTurn { return GeminiTurn{Call: tool, Args: args} }

// Gemini is a fake Gemini API on loopback that answers the agent's turns
// with its script, in order, and records what the CLI sent.
type Gemini struct {
	srv *httptest.Server
	t   testing.TB

	mu       sync.Mutex
	script   []GeminiTurn
	turns    []GeminiRequest
	unknown  []string
	finished bool
}

// GeminiRequest is one agent turn the CLI asked for: its contents, the
// conversation so far, and the tools it offers.
type GeminiRequest struct {
	Model    string
	Contents []GeminiContent `json:"contents"`
	// Tools are the tools the CLI offers the model, as it declares them.
	Tools json.RawMessage `json:"tools"`
}

// GeminiContent is one message of the conversation.
type GeminiContent struct {
	Role  string       `json:"role"`
	Parts []GeminiPart `json:"parts"`
}

// GeminiPart is a part of a message: a text, a function call or the
// function response the CLI sends back after running (or refusing) one.
type GeminiPart struct {
	Text             string                  `json:"text,omitempty"`
	FunctionCall     *GeminiFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *GeminiFunctionResponse `json:"functionResponse,omitempty"`
}

// GeminiFunctionCall is a call of a tool by the model.
type GeminiFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// GeminiFunctionResponse is what the CLI tells the model a call gave.
type GeminiFunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// NewGemini starts the fake, which plays script, one turn for each agent
// turn the CLI asks for; once the script is played it answers "Done.".
// The server stops when the test ends.
func NewGemini(t testing.TB, script ...GeminiTurn) *Gemini {
	t.Helper()
	g := &Gemini{t: t, script: script}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

// URL is the base URL to give the CLI (GOOGLE_GEMINI_BASE_URL).
func (g *Gemini) URL() string { return g.srv.URL }

// maxRequest bounds a request body the fake reads.
const maxRequest = 16 << 20

func (g *Gemini) serve(w http.ResponseWriter, r *http.Request) {
	model, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest))
	if err != nil || r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") {
		g.record(r)
		http.NotFound(w, r)
		return
	}
	switch method {
	case "streamGenerateContent":
		var req GeminiRequest
		if err := json.Unmarshal(body, &req); err != nil {
			g.t.Errorf("fake Gemini: a streamGenerateContent request that is not JSON: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Model = model
		g.stream(w, g.next(req))
	case "generateContent":
		// A side question (routing, next speaker): an answer the CLI
		// cannot parse makes it use its defaults, and nothing of the
		// agent's turns depends on it.
		writeJSON(w, response(GeminiText("{}"), ""))
	case "countTokens":
		writeJSON(w, map[string]any{"totalTokens": len(body) / 4})
	default:
		g.record(r)
		http.NotFound(w, r)
	}
}

func (g *Gemini) record(r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unknown = append(g.unknown, r.Method+" "+r.URL.Path)
}

// next records req and returns the turn that answers it.
func (g *Gemini) next(req GeminiRequest) GeminiTurn {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.turns = append(g.turns, req)
	if len(g.script) == 0 {
		g.finished = true
		return GeminiText("Done.")
	}
	turn := g.script[0]
	g.script = g.script[1:]
	return turn
}

// stream answers an agent turn with one event holding the whole turn.
func (g *Gemini) stream(w http.ResponseWriter, turn GeminiTurn) {
	b, err := json.Marshal(response(turn, fmt.Sprintf("call_%d", len(g.Requests()))))
	if err != nil {
		g.t.Errorf("fake Gemini: %v", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: %s\n\n", b)
}

// response is the GenerateContentResponse of turn.
func response(turn GeminiTurn, callID string) map[string]any {
	part := map[string]any{"text": turn.Text}
	if turn.Call != "" {
		part = map[string]any{"functionCall": map[string]any{"id": callID, "name": turn.Call, "args": turn.Args}}
	}
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-fake",
	}
}

// Requests returns the agent turns the CLI asked for, in order.
func (g *Gemini) Requests() []GeminiRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]GeminiRequest(nil), g.turns...)
}

// Unknown returns the requests the fake does not serve ("METHOD /path").
func (g *Gemini) Unknown() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.unknown...)
}

// Finished reports whether the CLI asked for a turn after the script
// was played: the model ended the run.
func (g *Gemini) Finished() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.finished
}

// FunctionResponses returns the function responses the CLI sent back to
// the model for tool, in order.
func (g *Gemini) FunctionResponses(tool string) []json.RawMessage {
	var out []json.RawMessage
	seen := map[string]bool{}
	for _, req := range g.Requests() {
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				// Every request repeats the conversation: a response
				// counts once, by its call's id (or text).
				if fr := p.FunctionResponse; fr != nil && fr.Name == tool && !seen[fr.ID+string(fr.Response)] {
					seen[fr.ID+string(fr.Response)] = true
					out = append(out, fr.Response)
				}
			}
		}
	}
	return out
}

// Env is the environment that points Gemini CLI at the fake, with home
// as its HOME (GeminiHome): an API key it sends nowhere else, no relaunch
// of itself into a child process (GEMINI_CLI_NO_RELAUNCH: one process
// to wait for, a second faster), no telemetry.
func (g *Gemini) Env(home string) []string {
	return []string{
		"HOME=" + home,
		"GOOGLE_GEMINI_BASE_URL=" + g.URL(),
		"GEMINI_API_KEY=fake-gemini-key",
		"GEMINI_CLI_NO_RELAUNCH=true",
		"GEMINI_TELEMETRY_ENABLED=false",
		"NO_COLOR=1",
	}
}

// GeminiHome makes a fresh HOME for Gemini CLI whose user settings
// (~/.gemini/settings.json) choose API-key auth, switch off telemetry,
// usage statistics and update checks, and hold extra (such as "hooks")
// besides. User settings, not a project's: Gemini CLI runs a project's
// hooks only in a trusted folder.
func GeminiHome(t testing.TB, extra map[string]any) string {
	t.Helper()
	settings := map[string]any{
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": false}},
	}
	maps.Copy(settings, extra)
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}
