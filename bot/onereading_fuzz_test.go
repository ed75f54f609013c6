package bot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/receipt"
	"github.com/slackapprove/slackbot/routing"
)

// FuzzOneReading feeds arbitrary bytes as a call's arguments through the
// check every door makes (ToolCallPart.ArgsObject, over
// agentrunner.CheckArgs) and asserts the one rule: either the arguments
// are refused, or every reader reads the same value — the card (what
// prettyJSON shows an approver, whole), CEL (what routing hands a policy),
// the forwarded bytes as Go's encoding/json reads them (as JSON.parse
// does: the last of a repeated name, numbers as doubles) and as a strict
// RFC 7493 parser reads them, and the receipt's (and grants') RFC 8785
// form. A refusal is checked against the strict parser too: the check
// refuses what I-JSON refuses (plus inexact numbers and deep nesting),
// and nothing else.
func FuzzOneReading(f *testing.F) {
	for _, seed := range []string{
		`{"repo":"scratch-decoy","note":"` + strings.Repeat("x", 300) + `","repo":"prod-realtarget"}`,
		`{"a":1,"\u0061":2}`,
		`{"\u00e9":1,"\u00E9":2}`,
		`{"items":[{"a":1},{"b":1,"b":2}]}`,
		`{"a":{"a":{"a":1}},"b":[{"a":1},{"a":1}]}`,
		`"{\"a\":1,\"a\":2}"`,
		`"{\"a\":\"\ud800\"}"`,
		`"  "`,
		"{\"a\":\"\xf0\x9f\x98\"}",
		"{\"\xff\":1}",
		`{"\ud800":1,"\udbff":2}`,
		`{"\ud83d\ude42":"\uD83D\uDE42 🙂","\ufffd":"�"}`,
		`{"a":"\u200b\u202e\u0000\n"}`,
		`{"id":9007199254740993}`,
		`{"id":9007199254740994,"b":-0,"c":1.0,"d":1e2,"e":0.1,"f":1.7976931348623157e308,"g":5e-324}`,
		`{"a":100.0000000000000001,"b":1e400,"c":-1e-400}`,
		`{"a":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`,
		`{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
		`{"a":` + strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat("}", 71),
		``, `null`, `{}`, `[]`, `{"a":1}x`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		call := agentrunner.ToolCallPart{ToolName: "t", Args: args, ToolCallID: "c1"}
		forwarded, err := call.ArgsObject()
		if err != nil {
			checkRefusal(t, args, err)
			return
		}
		if !jsontext.Value(forwarded).IsValid() || !receipt.ExactNumbers(forwarded) {
			t.Fatalf("accepted %q, which is not I-JSON with exact numbers", forwarded)
		}
		readings := map[string]any{}

		shown := prettyJSON(call.Args, math.MaxInt)
		if !shown.whole() || !jsontext.Value(shown.prefix).IsValid() {
			t.Fatalf("the card shows %q as %q: not whole, or not one reading", args, shown.prefix)
		}
		readings["card"] = decodeNumbers(t, "the card", []byte(shown.prefix))

		m, err := routing.ArgsForPolicy(call)
		if err != nil {
			t.Fatalf("accepted %q, which a policy cannot read: %v", args, err)
		}
		readings["CEL"] = routing.PolicyInput{Args: m}.Vars()["args"]

		var goValue any
		if err := json.Unmarshal(forwarded, &goValue); err != nil {
			t.Fatalf("encoding/json cannot read the forwarded %q: %v", forwarded, err)
		}
		readings["forwarded, encoding/json"] = goValue

		var strict any
		if err := jsonv2.Unmarshal(forwarded, &strict); err != nil {
			t.Fatalf("a strict parser cannot read the forwarded %q: %v", forwarded, err)
		}
		readings["forwarded, strict"] = strict

		canon, err := receipt.Canonical(forwarded)
		if err != nil {
			t.Fatalf("no receipt for the forwarded %q: %v", forwarded, err)
		}
		readings["receipt (RFC 8785)"] = decodeNumbers(t, "the receipt's form", canon)

		// reflect.DeepEqual, not cmp.Diff: cmp's diff of equal slices nested
		// 64 deep takes time exponential in the depth.
		want := exact(t, readings["card"])
		for who, v := range readings {
			if got := exact(t, v); !reflect.DeepEqual(got, want) {
				t.Errorf("arguments %q: %s reads %v, the card %v", args, who, got, want)
			}
		}
	})
}

// checkRefusal checks that the check refused args for a reason a strict
// parser sees too, and refused nothing I-JSON accepts.
func checkRefusal(t *testing.T, args []byte, err error) {
	t.Helper()
	raw := bytes.TrimSpace(args)
	inner := raw
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return // not a JSON string: refused as not JSON
		}
		inner = []byte(strings.TrimSpace(s))
	}
	iJSON := jsontext.Value(raw).IsValid() && jsontext.Value(inner).IsValid()
	switch {
	case errors.Is(err, agentrunner.ErrArgsDuplicateName), errors.Is(err, agentrunner.ErrArgsNotUnicode):
		if iJSON {
			t.Fatalf("refused %q (%v), which a strict parser reads one way", args, err)
		}
	case errors.Is(err, agentrunner.ErrArgsInexactNumber):
		if receipt.ExactNumbers(inner) {
			t.Fatalf("refused %q (%v), whose numbers are exact", args, err)
		}
	case errors.Is(err, agentrunner.ErrArgsTooDeep):
	case iJSON && receipt.ExactNumbers(inner) && len(inner) > 0 && inner[0] == '{':
		t.Fatalf("refused %q (%v), an I-JSON object", args, err)
	}
}

// decodeNumbers reads JSON text keeping its numbers' digits, as a person
// reads them.
func decodeNumbers(t *testing.T, what string, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s %q is not JSON: %v", what, b, err)
	}
	return v
}

// exact is v with every number as its exact value, so that readers that
// keep digits, ints or doubles compare.
func exact(t *testing.T, v any) any {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = exact(t, e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = exact(t, e)
		}
		return out
	case json.Number:
		return rational(t, string(x))
	case float64:
		return rational(t, strconv.FormatFloat(x, 'g', -1, 64))
	case int64:
		return rational(t, strconv.FormatInt(x, 10))
	case string, bool, nil:
		return x
	}
	t.Fatalf("a reader read %T %v", v, v)
	return nil
}

func rational(t *testing.T, n string) string {
	t.Helper()
	r, ok := new(big.Rat).SetString(n)
	if !ok {
		t.Fatalf("number %q", n)
	}
	return fmt.Sprintf("number %s", r.RatString())
}
