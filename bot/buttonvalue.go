package bot

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrInvalidActionValue is returned by DecodeAction for a button value that
// EncodeAction did not produce.
var ErrInvalidActionValue = errors.New("invalid action value")

// Limits of an action button value.
const (
	// MaxActionValueLen is Slack's limit on a button's value, in characters.
	MaxActionValueLen = 2000
	// MaxTokenLen is the longest resume token EncodeAction accepts, in
	// bytes. agentrunner.NewToken makes 43-character tokens.
	MaxTokenLen = 256
)

// hashedCallPrefix starts the call reference DecodeAction returns for a
// call id too long to carry in a button value.
const hashedCallPrefix = "sha256:"

// actionVersion is the first byte of every encoded value, so a later format
// can be told apart from this one.
const actionVersion = '1'

// Flags following actionVersion, in this order.
const (
	flagTokenEncoded = 't' // the token is base64url-encoded
	flagCallHashed   = 'h' // the call part is the SHA-256 of the call id
)

// EncodeAction returns the value of an approval message's buttons: the
// resume token and the tool_call_id, compact and opaque to users, at most
// MaxActionValueLen characters.
//
// The value is "1<flags>.<token>.<call id>". A tool_call_id that would make
// the value longer than Slack allows, or that is not valid UTF-8, is
// replaced by its SHA-256: DecodeAction then returns a call reference, not
// the id, and ResolveCallID maps the reference back to the pending call's
// id. Hashing rather than refusing keeps every call decidable from Slack,
// whatever id the model chose.
//
// EncodeAction returns "" for an empty token or one longer than
// MaxTokenLen; such a token cannot come from agentrunner.NewToken, and a
// button with an empty value is refused by DecodeAction.
func EncodeAction(token, callID string) string {
	if token == "" || len(token) > MaxTokenLen {
		return ""
	}
	flags, tok := "", token
	if !isBase64URL(token) {
		flags, tok = string(flagTokenEncoded), base64.RawURLEncoding.EncodeToString([]byte(token))
	}
	if v := string(actionVersion) + flags + "." + tok + "." + callID; utf8.ValidString(callID) && textLen(v) <= MaxActionValueLen {
		return v
	}
	return string(actionVersion) + flags + string(flagCallHashed) + "." + tok + "." + callHash(callID)
}

// DecodeAction returns the resume token and the call id (or, for a call id
// too long to carry, a call reference for ResolveCallID) that EncodeAction
// put in a button value. Any other value is refused with an error wrapping
// ErrInvalidActionValue.
func DecodeAction(v string) (token, callID string, err error) {
	fail := func(why string) (string, string, error) {
		return "", "", fmt.Errorf("decode action value: %s: %w", why, ErrInvalidActionValue)
	}
	if v == "" {
		return fail("empty")
	}
	if len(v) > 4*MaxActionValueLen || !utf8.ValidString(v) || textLen(v) > MaxActionValueLen {
		return fail("not a button value")
	}
	head, rest, ok := strings.Cut(v, ".")
	if !ok || head == "" || head[0] != actionVersion {
		return fail("unknown format")
	}
	tokenEncoded, callHashed, ok := parseFlags(head[1:])
	if !ok {
		return fail("unknown flags")
	}
	tok, call, ok := strings.Cut(rest, ".")
	if !ok {
		return fail("no call id")
	}
	if tok == "" || !isBase64URL(tok) {
		return fail("bad token")
	}
	if tokenEncoded {
		raw, err := base64.RawURLEncoding.Strict().DecodeString(tok)
		// A token that needs no encoding is never encoded, so only one value
		// names each (token, call) pair.
		if err != nil || len(raw) == 0 || isBase64URL(string(raw)) {
			return fail("bad token")
		}
		tok = string(raw)
	}
	if len(tok) > MaxTokenLen {
		return fail("token too long")
	}
	if callHashed {
		if !isCallHash(call) {
			return fail("bad call hash")
		}
		return tok, hashedCallPrefix + call, nil
	}
	return tok, call, nil
}

// ResolveCallID returns the id among ids that ref names: ref itself when it
// is one of ids, or the id whose hash a reference from DecodeAction or
// DecodeModalMetadata carries.
func ResolveCallID(ref string, ids []string) (string, bool) {
	for _, id := range ids {
		if id == ref {
			return id, true
		}
	}
	h, ok := strings.CutPrefix(ref, hashedCallPrefix)
	if !ok || !isCallHash(h) {
		return "", false
	}
	for _, id := range ids {
		if callHash(id) == h {
			return id, true
		}
	}
	return "", false
}

// callRef is how a call id travels where space is short: the id itself if
// it is valid UTF-8 and at most maxLen characters, else a hash reference
// that ResolveCallID understands.
func callRef(callID string, maxLen int) string {
	if utf8.ValidString(callID) && textLen(callID) <= maxLen {
		return callID
	}
	return hashedCallPrefix + callHash(callID)
}

func parseFlags(f string) (tokenEncoded, callHashed bool, ok bool) {
	if f != "" && f[0] == flagTokenEncoded {
		tokenEncoded, f = true, f[1:]
	}
	if f != "" && f[0] == flagCallHashed {
		callHashed, f = true, f[1:]
	}
	return tokenEncoded, callHashed, f == ""
}

// callHash is the base64url SHA-256 of a call id: 43 characters.
func callHash(callID string) string {
	sum := sha256.Sum256([]byte(callID))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func isCallHash(s string) bool {
	if len(s) != base64.RawURLEncoding.EncodedLen(sha256.Size) || !isBase64URL(s) {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil
}

// isBase64URL reports whether s is non-empty and uses only the base64url
// alphabet, which never needs escaping in Slack or in the value format.
func isBase64URL(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
