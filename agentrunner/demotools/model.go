package demotools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/slackapprove/slackbot/agentrunner"
)

// Model is the deterministic test model `slackbot dev` uses with the demo
// tools: no network, no randomness, and it understands the demo prompts,
// so a person trying slackbot sees the tool they asked for:
//
//	delete customer C-42        → delete_customer(customer_id: "C-42")
//	refund order A-1002 150     → issue_refund(order_id: "A-1002", amount: 150)
//	delete the file temp.txt    → delete_file(path: "temp.txt")
//	look up order A-1001        → lookup_order(order_id: "A-1001")
//
// Several requests in one message ("look up order A-1001 and refund order
// A-1001 20") make several calls. Once the tools have answered it ends
// with one sentence per call saying what happened: the result, the denial
// and its reason, or the failure. A prompt it does not understand gets a
// short help text.
type Model struct{}

var demoPatterns = []struct {
	re   *regexp.Regexp
	tool string
	args func(m []string) map[string]any
}{
	{regexp.MustCompile(`(?i)\bdelete\s+(?:the\s+)?customer\s+([\w.-]+)`), "delete_customer",
		func(m []string) map[string]any { return map[string]any{"customer_id": m[1]} }},
	{regexp.MustCompile(`(?i)\brefund\s+(?:order\s+)?([\w.-]+)\s+(?:by\s+|for\s+)?\$?(\d+(?:\.\d+)?)`), "issue_refund",
		func(m []string) map[string]any {
			amount, _ := strconv.ParseFloat(m[2], 64)
			return map[string]any{"order_id": m[1], "amount": amount}
		}},
	{regexp.MustCompile(`(?i)\bdelete\s+(?:the\s+)?file\s+([\w./-]+)`), "delete_file",
		func(m []string) map[string]any { return map[string]any{"path": m[1]} }},
	{regexp.MustCompile(`(?i)\b(?:look\s*up|lookup|show|find)\s+(?:the\s+)?order\s+([\w.-]+)`), "lookup_order",
		func(m []string) map[string]any { return map[string]any{"order_id": m[1]} }},
}

// Help is what the demo model answers to a prompt it does not understand.
const Help = "I am the demo model. Try: \"delete customer C-42\", \"refund order A-1002 150\" " +
	"(refunds over $100 need approval), \"delete the file temp.txt\", or \"look up order A-1001\"."

// Request implements agentrunner.Model.
func (Model) Request(ctx context.Context, messages []agentrunner.Message, params agentrunner.RequestParams) (agentrunner.Message, error) {
	// Once tools have answered in this turn, say what happened.
	turn := turnStart(messages)
	for i := len(messages) - 1; i > turn; i-- {
		m := messages[i]
		if m.Kind == agentrunner.KindResponse && len(m.ToolCalls()) > 0 {
			return report(messages[i+1:]), nil
		}
		if m.Kind == agentrunner.KindResponse {
			break
		}
	}
	prompt := lastPrompt(messages)
	resp := agentrunner.Message{Kind: agentrunner.KindResponse, ModelName: "demo"}
	if turn > 0 {
		if m, ok := followUp(prompt, messages[:turn], params); ok {
			return m, nil
		}
	}
	offered := map[string]bool{}
	for _, td := range params.Tools {
		offered[td.Name] = true
	}
	type match struct {
		at   int
		part agentrunner.Part
	}
	var found []match
	for _, p := range demoPatterns {
		if !offered[p.tool] {
			continue
		}
		for i, m := range p.re.FindAllStringSubmatchIndex(prompt, -1) {
			groups := make([]string, len(m)/2)
			for g := range groups {
				if m[2*g] >= 0 {
					groups[g] = prompt[m[2*g]:m[2*g+1]]
				}
			}
			args, err := json.Marshal(p.args(groups))
			if err != nil {
				return agentrunner.Message{}, err
			}
			id := fmt.Sprintf("demo_%s_%d", p.tool, i+1)
			found = append(found, match{at: m[0], part: agentrunner.ToolCall(p.tool, args, id)})
		}
	}
	if len(found) == 0 {
		resp.Parts = []agentrunner.Part{agentrunner.Text(Help)}
		return resp, nil
	}
	// Call the tools in the order the prompt asks for them.
	for i := range found {
		for j := i + 1; j < len(found); j++ {
			if found[j].at < found[i].at {
				found[i], found[j] = found[j], found[i]
			}
		}
	}
	for _, f := range found {
		resp.Parts = append(resp.Parts, f.part)
	}
	return resp, nil
}

// report sums up the tool returns of a turn, one line per call.
func report(msgs []agentrunner.Message) agentrunner.Message {
	var lines []string
	for _, m := range msgs {
		for _, p := range m.Parts {
			switch {
			case p.PartKind == agentrunner.PartRetryPrompt:
				lines = append(lines, fmt.Sprintf("I could not call %s: %s", p.ToolName, p.Content))
			case p.PartKind != agentrunner.PartToolReturn:
			case p.Outcome == agentrunner.OutcomeDenied:
				lines = append(lines, fmt.Sprintf("I did not run %s: %s", p.ToolName, p.ReturnText()))
			case p.Outcome == agentrunner.OutcomeFailed:
				lines = append(lines, fmt.Sprintf("%s failed: %s", p.ToolName, p.ReturnText()))
			default:
				lines = append(lines, fmt.Sprintf("Done: %s", p.ReturnText()))
			}
		}
	}
	if len(lines) == 0 {
		lines = []string{"Nothing to report."}
	}
	return agentrunner.Message{Kind: agentrunner.KindResponse, ModelName: "demo",
		Parts: []agentrunner.Part{agentrunner.Text(strings.Join(lines, "\n"))}}
}

func lastPrompt(messages []agentrunner.Message) string {
	for i := len(messages) - 1; i >= 0; i-- {
		for _, p := range messages[i].Parts {
			if p.PartKind == agentrunner.PartUserPrompt {
				return strings.TrimSpace(p.Content)
			}
		}
	}
	return ""
}

// turnStart is the index of the request holding the latest user prompt
// (-1 when there is none): the start of the current turn.
func turnStart(messages []agentrunner.Message) int {
	for i := len(messages) - 1; i >= 0; i-- {
		for _, p := range messages[i].Parts {
			if p.PartKind == agentrunner.PartUserPrompt {
				return i
			}
		}
	}
	return -1
}

var (
	newAmountRE = regexp.MustCompile(`(?i)\b(?:make\s+it|change\s+it\s+to|set\s+it\s+to|instead)\s+\$?(\d+(?:\.\d+)?)|\$?(\d+(?:\.\d+)?)\s+instead\b`)
	recapRE     = regexp.MustCompile(`(?i)\bwhat\s+(?:did\s+you\s+(?:just\s+)?do|have\s+you\s+done|happened)\b`)
)

// followUp answers a prompt that only makes sense after earlier turns
// (before): a new amount for the last refund, or a recap.
func followUp(prompt string, before []agentrunner.Message, params agentrunner.RequestParams) (agentrunner.Message, bool) {
	if recapRE.MatchString(prompt) {
		m := report(before)
		if m.Text() == "Nothing to report." {
			m.Parts = []agentrunner.Part{agentrunner.Text("I have not run any tool in this conversation yet.")}
		} else {
			m.Parts = []agentrunner.Part{agentrunner.Text("So far in this conversation:\n" + m.Text())}
		}
		return m, true
	}
	m := newAmountRE.FindStringSubmatch(prompt)
	if m == nil || !offers(params, "issue_refund") {
		return agentrunner.Message{}, false
	}
	amount, err := strconv.ParseFloat(m[1]+m[2], 64)
	if err != nil {
		return agentrunner.Message{}, false
	}
	order := lastRefundOrder(before)
	if order == "" {
		return agentrunner.Message{}, false
	}
	args, _ := json.Marshal(map[string]any{"order_id": order, "amount": amount})
	return agentrunner.Message{Kind: agentrunner.KindResponse, ModelName: "demo",
		Parts: []agentrunner.Part{agentrunner.ToolCall("issue_refund", args, fmt.Sprintf("demo_issue_refund_followup_%d", len(before)))}}, true
}

// lastRefundOrder is the order of the conversation's latest refund: the
// last issue_refund call, else the last prompt asking for one (a thread
// read from Slack has prompts but no calls).
func lastRefundOrder(msgs []agentrunner.Message) string {
	var refund = demoPatterns[0]
	for _, p := range demoPatterns {
		if p.tool == "issue_refund" {
			refund = p
		}
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, p := range msgs[i].Parts {
			switch p.PartKind {
			case agentrunner.PartToolCall:
				if p.ToolName != refund.tool {
					continue
				}
				var a struct {
					OrderID string `json:"order_id"`
				}
				if c := (agentrunner.ToolCallPart{ToolName: p.ToolName, Args: p.Args}); json.Unmarshal(argsObject(c), &a) == nil && a.OrderID != "" {
					return a.OrderID
				}
			case agentrunner.PartUserPrompt:
				if all := refund.re.FindAllStringSubmatch(p.Content, -1); len(all) > 0 {
					return all[len(all)-1][1]
				}
			}
		}
	}
	return ""
}

func argsObject(c agentrunner.ToolCallPart) []byte {
	b, err := c.ArgsObject()
	if err != nil {
		return c.Args
	}
	return b
}

func offers(params agentrunner.RequestParams, tool string) bool {
	for _, td := range params.Tools {
		if td.Name == tool {
			return true
		}
	}
	return false
}
