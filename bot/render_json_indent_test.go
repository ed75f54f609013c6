package bot

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// indentJSONCases are documents at the edges of JSON's grammar, valid and
// not, where a hand-written validator could part from json.Valid.
var indentJSONCases = []string{
	`{}`, `[]`, `0`, `-0`, `1.5e+10`, `1E-2`, `"x"`, `true`, `false`, `null`,
	` [ 1 , { "a" : [ ] , "b" : { } } ] `, `{"a":{"b":[1,[2,[3]]]}}`,
	`"\u00e9\n\t\\\"\/\b\f\r"`, `"\uD83D\uDE00"`, "\"\xff\xfe invalid UTF-8\"",
	"\"tab\tin string\"", "\"nul\x00\"", `"\x"`, `"\u12"`, `"\u12G4"`, `"unterminated`, `"\`,
	`01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `--1`, `1.5.5`, `0x10`, `Infinity`, `NaN`,
	`tru`, `truee`, `nul`, `falsy`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`,
	`{1:2}`, `{"a" 1}`, `{"a":1 "b":2}`, `[1 2]`, `[`, `{`, `]`, `}`, `[}`, `{]`, `[1}`, `{"a":1]`,
	`{} {}`, `1 2`, `[] x`, "\x00", `"a":1`, `[[[[]]]`, `[[[]]]]`,
	strings.Repeat("[", 100) + strings.Repeat("]", 100), strings.Repeat("[", 100) + strings.Repeat("]", 99),
}

// checkIndentJSON holds indentJSON to json.Valid and json.Indent: it
// reports a document valid exactly when json.Valid does, and then writes
// what json.Indent writes (revealed), indented or compact.
func checkIndentJSON(t *testing.T, src []byte) {
	t.Helper()
	for _, indent := range []string{"  ", ""} {
		w := &textSink{limit: 1 << 30}
		got := indentJSON(w, src, indent)
		if want := json.Valid(src); got != want {
			t.Fatalf("indentJSON(%q, %q) reports valid %v, json.Valid says %v", src, indent, got, want)
		}
		if !got {
			continue
		}
		var buf bytes.Buffer
		if indent == "" {
			_ = json.Compact(&buf, src)
		} else {
			_ = json.Indent(&buf, bytes.TrimSpace(src), "", indent)
		}
		if want := reveal(buf.String(), true); w.b.String() != want {
			t.Fatalf("indentJSON(%q, %q) =\n%s\nwant\n%s", src, indent, w.b.String(), want)
		}
	}
}

func TestIndentJSONValidatesAsJSONValid(t *testing.T) {
	for _, in := range indentJSONCases {
		checkIndentJSON(t, []byte(in))
	}
	checkIndentJSON(t, bigArgs(5_000))
	checkIndentJSON(t, hostileArgs(t, 5_000))
	checkIndentJSON(t, worstArgs(64<<10))
}

// A document that is not JSON is shown as it is, whatever it starts with.
func TestPrettyJSONShowsInvalidAsIs(t *testing.T) {
	for _, in := range []string{`{"a":1,}`, `[1, 2`, `{"amount": 01}`, "{\"a\":\"\x01\"}", `{"a":"b"} trailing`} {
		got := prettyJSON(json.RawMessage(in), 1<<20)
		if want := reveal(in, true); got.prefix != want {
			t.Errorf("prettyJSON(%q) = %q, want it as it is: %q", in, got.prefix, want)
		}
	}
}

func FuzzIndentJSON(f *testing.F) {
	for _, in := range indentJSONCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkIndentJSON(t, src)
	})
}
