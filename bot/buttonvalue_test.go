package bot

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slackapprove/slackbot/agentrunner"
)

func TestEncodeActionRoundTrip(t *testing.T) {
	tests := []struct {
		name       string
		token      string
		callID     string
		wantHashed bool
	}{
		{"ordinary", testToken, "call_1", false},
		{"openai id", agentrunner.NewToken(), "call_Zx81kQ2mWb0aYt7s", false},
		{"dots and separators", testToken, "a.b.c|d:e", false},
		{"unicode", testToken, "appel-🙂-שלום-e\u0301", false},
		{"empty call id", testToken, "", false},
		{"token needing encoding", "tok en.with|odd:chars🙂", "call_1", false},
		{"longest inline id", testToken, strings.Repeat("x", MaxActionValueLen-len("1..")-len(testToken)), false},
		{"one too long", testToken, strings.Repeat("x", MaxActionValueLen-len("1..")-len(testToken)+1), true},
		{"5,000 characters", testToken, strings.Repeat("c", 5000), true},
		{"long emoji id", testToken, strings.Repeat("🙂", 1000), true}, // 2,000 UTF-16 units
		{"invalid UTF-8", testToken, "call\xff\xfe", true},
		{"encoded token and long id", "tok en", strings.Repeat("c", 5000), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := EncodeAction(tt.token, tt.callID)
			if n := textLen(v); n == 0 || n > MaxActionValueLen {
				t.Fatalf("EncodeAction made %d characters, want 1..%d", n, MaxActionValueLen)
			}
			if !utf8.ValidString(v) {
				t.Fatalf("EncodeAction made invalid UTF-8: %q", v)
			}
			tok, ref, err := DecodeAction(v)
			if err != nil {
				t.Fatalf("DecodeAction(%.80q): %v", v, err)
			}
			if tok != tt.token {
				t.Errorf("token = %q, want %q", tok, tt.token)
			}
			if hashed := ref != tt.callID; hashed != tt.wantHashed {
				t.Errorf("call id hashed = %v, want %v (ref %.60q)", hashed, tt.wantHashed, ref)
			}
			id, ok := ResolveCallID(ref, []string{"call_other", tt.callID, "call_last"})
			if !ok || id != tt.callID {
				t.Errorf("ResolveCallID(%.60q) = %.60q, %v, want the call id", ref, id, ok)
			}
		})
	}
}

func TestEncodeActionRefusesBadTokens(t *testing.T) {
	for _, token := range []string{"", strings.Repeat("t", MaxTokenLen+1)} {
		if v := EncodeAction(token, "call_1"); v != "" {
			t.Errorf("EncodeAction(token of %d bytes) = %.40q, want \"\"", len(token), v)
		}
	}
}

func TestDecodeActionRefusesGarbage(t *testing.T) {
	hash := callHash("call_1")
	for _, v := range []string{
		"",
		"x",
		"1",
		"1.",
		"1." + testToken,
		"2." + testToken + ".call_1",
		"1x." + testToken + ".call_1",
		"1hh." + testToken + "." + hash,
		"1ht." + testToken + "." + hash,
		"." + testToken + ".call_1",
		"1..call_1",
		"1.tok*en.call_1",
		"1t.dG9r.call_1", // "tok" needs no encoding: not canonical
		"1t.!!!.call_1",
		"1t.A.call_1",
		"1h." + testToken + ".short",
		"1h." + testToken + "." + hash + "x",
		"1." + strings.Repeat("t", MaxTokenLen+1) + ".call_1",
		"1." + testToken + ".call\xff",
		strings.Repeat("1.", 10_000),
		`{"token":"x"}`,
	} {
		tok, call, err := DecodeAction(v)
		if !errors.Is(err, ErrInvalidActionValue) {
			t.Errorf("DecodeAction(%.60q) = %q, %q, %v; want ErrInvalidActionValue", v, tok, call, err)
		}
	}
}

func TestResolveCallID(t *testing.T) {
	long := strings.Repeat("L", 3000)
	ids := []string{"call_1", long, "sha256:lookalike"}
	tests := []struct {
		ref    string
		want   string
		wantOK bool
	}{
		{"call_1", "call_1", true},
		{hashedCallPrefix + callHash(long), long, true},
		{"sha256:lookalike", "sha256:lookalike", true}, // an id that looks like a reference is still itself
		{hashedCallPrefix + callHash("gone"), "", false},
		{"call_2", "", false},
		{hashedCallPrefix + "short", "", false},
	}
	for _, tt := range tests {
		got, ok := ResolveCallID(tt.ref, ids)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ResolveCallID(%.40q) = %.40q, %v; want %.40q, %v", tt.ref, got, ok, tt.want, tt.wantOK)
		}
	}
}

// FuzzDecodeAction checks that DecodeAction never panics, that whatever it
// accepts re-encodes to the same value, and that EncodeAction round-trips
// any call id within Slack's limit. Seeds are in testdata/fuzz.
func FuzzDecodeAction(f *testing.F) {
	f.Fuzz(func(t *testing.T, value, callID string) {
		tok, ref, err := DecodeAction(value)
		if err == nil {
			if tok == "" {
				t.Fatalf("DecodeAction(%q) accepted an empty token", value)
			}
			// A hashed call id cannot be re-encoded: the id is gone.
			if head, _, _ := strings.Cut(value, "."); !strings.ContainsRune(head, flagCallHashed) {
				if again := EncodeAction(tok, ref); again != value {
					t.Fatalf("DecodeAction(%q) = %q, %q, which encodes to %q", value, tok, ref, again)
				}
			}
		} else if !errors.Is(err, ErrInvalidActionValue) {
			t.Fatalf("DecodeAction(%q) error %v does not wrap ErrInvalidActionValue", value, err)
		}

		for _, token := range []string{testToken, value} {
			v := EncodeAction(token, callID)
			if token == "" || len(token) > MaxTokenLen {
				if v != "" {
					t.Fatalf("EncodeAction(bad token %q) = %q", token, v)
				}
				continue
			}
			if n := textLen(v); n > MaxActionValueLen {
				t.Fatalf("EncodeAction(%q, %q) is %d characters", token, callID, n)
			}
			gotTok, gotRef, err := DecodeAction(v)
			if err != nil {
				t.Fatalf("DecodeAction(EncodeAction(%q, %q) = %q): %v", token, callID, v, err)
			}
			if gotTok != token {
				t.Fatalf("token %q came back as %q", token, gotTok)
			}
			if id, ok := ResolveCallID(gotRef, []string{callID}); !ok || id != callID {
				t.Fatalf("call id %q came back as %q", callID, gotRef)
			}
		}
	})
}
