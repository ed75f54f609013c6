package agentrunner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slackapprove/slackbot/agentrunner"
)

// nested returns a JSON object holding n levels of arrays and objects in
// all, alternating, with a value at the bottom.
func nested(n int) string {
	var open, closing strings.Builder
	open.WriteString(`{"a":`)
	closing.WriteString(`}`)
	for i := 1; i < n; i++ {
		if i%2 == 1 {
			open.WriteString(`[`)
			closing.WriteString(`]`)
		} else {
			open.WriteString(`{"k":`)
			closing.WriteString(`}`)
		}
	}
	c := []rune(closing.String())
	for i, j := 0, len(c)-1; i < j; i, j = i+1, j-1 {
		c[i], c[j] = c[j], c[i]
	}
	return open.String() + `1` + string(c)
}

func TestCheckArgsDepth(t *testing.T) {
	quoted := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	tests := []struct {
		name string
		args string
		deep bool
	}{
		{"empty", ``, false},
		{"null", `null`, false},
		{"flat", `{"a":1}`, false},
		{"at the limit", nested(agentrunner.MaxArgsDepth), false},
		{"one level too deep", nested(agentrunner.MaxArgsDepth + 1), true},
		{"bare arrays too deep", strings.Repeat("[", 20000) + strings.Repeat("]", 20000), true},
		{"unbalanced brackets too deep", strings.Repeat("[", 65), true},
		{"string form at the limit", quoted(nested(agentrunner.MaxArgsDepth)), false},
		{"string form too deep", quoted(nested(agentrunner.MaxArgsDepth + 1)), true},
		{"brackets inside strings do not count", `{"a":"` + strings.Repeat("[{", 100) + `"}`, false},
		{"escaped quotes do not end a string", `{"a":"\"` + strings.Repeat("[", 100) + `\\"}`, false},
		{"escaped backslash ends a string", `{"a":"\\"` + `,"b":` + strings.Repeat("[", 65) + strings.Repeat("]", 65) + `}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := agentrunner.CheckArgs(json.RawMessage(tt.args))
			if got := errors.Is(err, agentrunner.ErrArgsTooDeep); got != tt.deep {
				t.Errorf("CheckArgs: err = %v, want too deep %v", err, tt.deep)
			}
			part := agentrunner.ToolCallPart{ToolName: "t", Args: json.RawMessage(tt.args), ToolCallID: "c1"}
			if err := part.CheckArgs(); errors.Is(err, agentrunner.ErrArgsTooDeep) != tt.deep || (tt.deep && !strings.Contains(err.Error(), "c1")) {
				t.Errorf("CheckArgs: err = %v, want too deep %v naming c1", err, tt.deep)
			}
		})
	}
}

// ArgsObject, which every reader of a call's arguments goes through,
// refuses over-deep arguments.
func TestArgsObjectRefusesDeepArgs(t *testing.T) {
	part := agentrunner.ToolCallPart{ToolName: "t", Args: json.RawMessage(nested(agentrunner.MaxArgsDepth + 1)), ToolCallID: "c1"}
	if _, err := part.ArgsObject(); !errors.Is(err, agentrunner.ErrArgsTooDeep) {
		t.Errorf("ArgsObject: err = %v, want ErrArgsTooDeep", err)
	}
	part.Args = json.RawMessage(nested(agentrunner.MaxArgsDepth))
	if _, err := part.ArgsObject(); err != nil {
		t.Errorf("ArgsObject at the limit: %v", err)
	}
}

// A model's call with over-deep arguments never reaches the ask function:
// the model is told why in a retry prompt, and the run goes on.
func TestRunnerRefusesDeepArgsBeforeAsking(t *testing.T) {
	deep := `{"customer_id":"a","extra":` + nested(agentrunner.MaxArgsDepth+1) + `}`
	model := &recorder{model: agentrunner.FunctionModel(func(_ context.Context, msgs []agentrunner.Message, _ agentrunner.RequestParams) (agentrunner.Message, error) {
		if len(msgs) == 1 {
			return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.ToolCall("delete_customer", json.RawMessage(deep), "d1")}}, nil
		}
		return agentrunner.Message{Parts: []agentrunner.Part{agentrunner.Text("gave up")}}, nil
	})}
	var asked atomic.Int32
	ask := &agentrunner.AskHandler{Tokens: agentrunner.NewMemoryTokens(), Ask: func(context.Context, *agentrunner.RunContext, agentrunner.DeferredToolRequests, string) (*agentrunner.DeferredToolResults, error) {
		asked.Add(1)
		return agentrunner.NewDeferredToolResults(), nil
	}}
	var ran atomic.Int32
	r := newRunner(t, model, []*agentrunner.Tool{deleteCustomerTool(&ran)}, agentrunner.WithHandlers(ask))
	res, err := r.Run(t.Context(), agentrunner.RunInput{Prompt: "delete"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Status != agentrunner.StatusComplete || asked.Load() != 0 || ran.Load() != 0 {
		t.Errorf("status %s, asked %d, ran %d; want complete, never asked, never ran", res.Status, asked.Load(), ran.Load())
	}
	parts := model.lastRequest()
	if len(parts) != 1 || parts[0].PartKind != agentrunner.PartRetryPrompt || !strings.Contains(parts[0].Content, "invalid arguments for delete_customer: arguments are nested deeper than 64 levels") {
		t.Errorf("last request = %+v, want a retry prompt saying the arguments are nested too deeply", parts)
	}
}

// AskHandler refuses over-deep calls in place, whoever built the requests,
// and asks about the others.
func TestAskHandlerRefusesDeepArgs(t *testing.T) {
	deep := json.RawMessage(nested(agentrunner.MaxArgsDepth + 1))
	var got []agentrunner.DeferredToolRequests
	h := approvingAsk(&got)
	req := agentrunner.DeferredToolRequests{
		Approvals: []agentrunner.ToolCallPart{{ToolName: "a", Args: deep, ToolCallID: "deep1"}, {ToolName: "a", Args: json.RawMessage(`{}`), ToolCallID: "ok1"}},
		Calls:     []agentrunner.ToolCallPart{{ToolName: "b", Args: deep, ToolCallID: "deep2"}},
		Metadata:  map[string]map[string]any{"deep1": {"x": 1}},
	}
	res, err := h.HandleDeferred(t.Context(), &agentrunner.RunContext{}, req)
	if err != nil {
		t.Fatalf("HandleDeferred: %v", err)
	}
	if len(got) != 1 || len(got[0].Approvals) != 1 || got[0].Approvals[0].ToolCallID != "ok1" || len(got[0].Calls) != 0 || len(got[0].Metadata) != 0 {
		t.Fatalf("asked %+v, want only ok1", got)
	}
	if !res.Approvals["ok1"].Approved {
		t.Errorf("ok1 = %+v, want approved", res.Approvals["ok1"])
	}
	if r := res.Approvals["deep1"]; r.Approved || !strings.Contains(r.DenialMessage(), "nested deeper than "+strconv.Itoa(agentrunner.MaxArgsDepth)) {
		t.Errorf("deep1 = %+v, want denied with the reason", r)
	}
	if r := res.Calls["deep2"]; !r.Failed || !strings.Contains(r.Message, "nested deeper") {
		t.Errorf("deep2 = %+v, want failed with the reason", r)
	}

	// Only over-deep calls: nothing is asked at all.
	got = nil
	req.Approvals = req.Approvals[:1]
	res, err = h.HandleDeferred(t.Context(), &agentrunner.RunContext{}, req)
	if err != nil || len(got) != 0 || res.Len() != 2 {
		t.Errorf("HandleDeferred = %d answers, %v; asked %d times; want 2 refusals, nothing asked", res.Len(), err, len(got))
	}
}

// CheckArgs refuses arguments that two parsers would read as two calls,
// naming where, and accepts the rest.
func TestCheckArgsOneReading(t *testing.T) {
	decoy := `{"repo":"scratch-decoy","note":"` + strings.Repeat("x", 3000) + `","repo":"prod-realtarget"}`
	quoted := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	tests := []struct {
		name string
		args string
		want error  // nil: accepted
		text string // what the error says
	}{
		{"the decoy", decoy, agentrunner.ErrArgsDuplicateName, `duplicate member "repo" at /`},
		{"escaped name equal to a plain one", `{"a":1,"\u0061":2}`, agentrunner.ErrArgsDuplicateName, `duplicate member "a" at /`},
		{"escapes of one name", `{"\u00e9":1,"\u00E9":2}`, agentrunner.ErrArgsDuplicateName, `duplicate member "é" at /`},
		{"escaped slash", `{"a/b":1,"a\/b":2}`, agentrunner.ErrArgsDuplicateName, `duplicate member "a/b" at /`},
		{"nested in an array", `{"items":[{"a":1},{"b":1,"b":2}]}`, agentrunner.ErrArgsDuplicateName, `duplicate member "b" at /items/1`},
		{"pointer escapes", `{"a/~b":{"x":[0,{"y":1,"y":1}]}}`, agentrunner.ErrArgsDuplicateName, `duplicate member "y" at /a~1~0b/x/1`},
		{"many names, the repeat last", manyNames(500) + `,"k0":1}`, agentrunner.ErrArgsDuplicateName, `duplicate member "k0" at /`},
		{"string form", quoted(`{"a":1,"a":2}`), agentrunner.ErrArgsDuplicateName, `duplicate member "a" at /`},
		{"invalid UTF-8 in a value", "{\"a\":\"\xf0\x9f\x98\"}", agentrunner.ErrArgsNotUnicode, `string at /a is not Unicode text: invalid UTF-8`},
		{"invalid UTF-8 in a name", "{\"\xff\":1}", agentrunner.ErrArgsNotUnicode, `member name at / is not Unicode text: invalid UTF-8`},
		{"UTF-8 of a surrogate", "{\"a\":[\"\xed\xa0\x80\"]}", agentrunner.ErrArgsNotUnicode, `string at /a/0 is not Unicode text: invalid UTF-8`},
		{"lone high surrogates as names", `{"\ud800":1,"\udbff":2}`, agentrunner.ErrArgsNotUnicode, `member name at / is not Unicode text: lone UTF-16 surrogate \ud800`},
		{"lone low surrogate", `{"a":"x\udc00"}`, agentrunner.ErrArgsNotUnicode, `lone UTF-16 surrogate \udc00`},
		{"high surrogate then no low", `{"a":"\ud83d\u0041"}`, agentrunner.ErrArgsNotUnicode, `lone UTF-16 surrogate \ud83d`},
		{"lone surrogate in the string form itself", `"{\"a\":\"\ud800\"}"`, agentrunner.ErrArgsNotUnicode, `string at / is not Unicode text`},
		{"integer beyond 2^53", `{"id":9007199254740993}`, agentrunner.ErrArgsInexactNumber, `number 9007199254740993 at /id: a number in the arguments is not exactly an IEEE 754 double`},
		{"more digits than a double", `{"a":[100.0000000000000001]}`, agentrunner.ErrArgsInexactNumber, `at /a/0`},
		{"beyond a double", `{"a":1e400}`, agentrunner.ErrArgsInexactNumber, `number 1e400 at /a`},
		{"below a double", `{"a":-1e-400}`, agentrunner.ErrArgsInexactNumber, `at /a`},
		{"a long number is cut short", `{"a":` + strings.Repeat("9", 1000) + `}`, agentrunner.ErrArgsInexactNumber, strings.Repeat("9", 40) + "… at /a"},
		{"same name in sibling objects", `{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":1}]}`, nil, ""},
		{"same name at two depths", `{"a":{"a":{"a":1}}}`, nil, ""},
		{"names that differ in case", `{"id":1,"ID":2,"Id":3}`, nil, ""},
		{"escapes that differ", `{"\u00e9":1,"e\u0301":2}`, nil, ""},
		{"a repeated value is no repeated name", `{"a":"a","b":"a","c":["a","a"]}`, nil, ""},
		{"names in strings", `{"a":"\"a\":1","b":"{\"a\":2}"}`, nil, ""},
		{"paired surrogates", `{"\ud83d\ude42":"\uD83D\uDE42 🙂"}`, nil, ""},
		{"U+FFFD itself", `{"\ufffd":"�"}`, nil, ""},
		{"exact numbers", `{"a":[0,-0,1.5,0.1,1e2,1E-7,2.5e-300,1.7976931348623157e308,9007199254740992,123456789012345,-0.000000000001]}`, nil, ""},
		{"many distinct names", manyNames(5000) + `}`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := agentrunner.CheckArgs(json.RawMessage(tt.args))
			switch {
			case tt.want == nil && err != nil:
				t.Errorf("CheckArgs = %v, want nil", err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Errorf("CheckArgs = %v, want %v", err, tt.want)
			case tt.want != nil && !strings.Contains(err.Error(), tt.text):
				t.Errorf("CheckArgs = %q, want it to say %q", err, tt.text)
			}
			// Every reader of a call's arguments refuses them alike.
			if _, oerr := (agentrunner.ToolCallPart{Args: json.RawMessage(tt.args)}).ArgsObject(); tt.want != nil && !errors.Is(oerr, tt.want) {
				t.Errorf("ArgsObject = %v, want %v", oerr, tt.want)
			}
		})
	}
}

// manyNames is an object's opening and n distinct members, k0 to k<n-1>.
func manyNames(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	return b.String()
}

// hostileArgs are about 1 MiB of arguments CheckArgs accepts, each made
// to cost it the most of something: one object of short distinct names
// (the most names to remember), every name escaped (each decoded), many
// small objects in an array, numbers too long for the fast path, two
// half-MiB names that differ in their last byte, and 63 levels of objects
// each with a thousand names.
func hostileArgs() map[string]json.RawMessage {
	const size = 1 << 20
	object := func(member func(i int) string) json.RawMessage {
		var s strings.Builder
		s.WriteString("{")
		for i := 0; s.Len() < size; i++ {
			if i > 0 {
				s.WriteString(",")
			}
			s.WriteString(member(i))
		}
		s.WriteString("}")
		return json.RawMessage(s.String())
	}
	half := strings.Repeat("n", size/2)
	var deep strings.Builder
	for range agentrunner.MaxArgsDepth - 1 {
		deep.WriteString(manyNames(1000) + `,"next":`)
	}
	deep.WriteString("1" + strings.Repeat("}", agentrunner.MaxArgsDepth-1))
	return map[string]json.RawMessage{
		"short_names":   object(func(i int) string { return fmt.Sprintf(`"%x":0`, i) }),
		"escaped_names": object(func(i int) string { return fmt.Sprintf(`"\u0061%x":0`, i) }),
		"small_objects": json.RawMessage(`{"a":[` + strings.Repeat(`{"a":1,"b":2,"c":3},`, size/20) + `{}]}`),
		"long_numbers":  json.RawMessage(`{"a":[` + strings.Repeat(`1.2345678901234567,`, size/19) + `0]}`),
		"long_names":    json.RawMessage(`{"` + half + `a":1,"` + half + `b":2}`),
		"deep_names":    json.RawMessage(deep.String()),
	}
}

// CheckArgs costs memory linear in its input, whatever its shape: at most
// 16 bytes per byte of the worst 1 MiB, the names a map remembers (a copy
// of the input, string headers and the map's own room).
func TestCheckArgsMemoryIsBounded(t *testing.T) {
	for name, args := range hostileArgs() {
		var err error
		n := allocated(func() { err = agentrunner.CheckArgs(args) })
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if limit := uint64(16 * len(args)); n > limit {
			t.Errorf("%s: CheckArgs of %d bytes allocated %d bytes, want at most %d", name, len(args), n, limit)
		}
	}
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// BenchmarkCheckArgs checks 1 MiB of each of hostileArgs.
func BenchmarkCheckArgs(b *testing.B) {
	for name, args := range hostileArgs() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(args)))
			b.ReportAllocs()
			for b.Loop() {
				_ = agentrunner.CheckArgs(args)
			}
		})
	}
}
