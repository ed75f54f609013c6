package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// MinKeyLength is the shortest bearer key ParseKeys accepts.
const MinKeyLength = 16

// Key is one API client: its bearer key, its name, and the routes it may
// use.
type Key struct {
	// Name names the client: in cards (unless the request names a
	// requester), as the owner of its tokens, as who answered through the
	// API, and in the audit stream. NAME in API_KEYS, else "key<N>" for the
	// N-th entry (from 1) — give keys names if you may reorder them, since
	// a client owns its tokens by name.
	Name string
	// Secret is the bearer key. Never log it.
	Secret string
	// Routes, when not nil, are the only routes the client may send calls
	// to.
	Routes []string

	digest [sha256.Size]byte
}

// ErrInvalidKeys is wrapped by every error of ParseKeys.
var ErrInvalidKeys = errors.New("invalid API_KEYS")

// ParseKeys parses API_KEYS: comma-separated entries, each one of
//
//	KEY
//	NAME=KEY
//	NAME=KEY@route1|route2
//
// NAME is 1 to 64 letters, digits, '-', '_' or '.'; KEY is at least
// MinKeyLength characters without whitespace, ',', '=', '@' or '|' (use
// e.g. `openssl rand -hex 32`); the routes after '@' restrict the client
// to those route names. Spaces around entries are ignored. Errors name the
// bad entry by its position and never repeat a key.
func ParseKeys(s string) ([]Key, error) {
	var keys []Key
	var problems []string
	names := map[string]int{}
	secrets := map[string]int{}
	for i, entry := range strings.Split(s, ",") {
		pos := i + 1
		entry = strings.TrimSpace(entry)
		if entry == "" {
			if strings.TrimSpace(s) != "" {
				problems = append(problems, fmt.Sprintf("entry %d is empty", pos))
			}
			continue
		}
		k, err := parseKey(entry, pos)
		if err != nil {
			problems = append(problems, fmt.Sprintf("entry %d: %v", pos, err))
			continue
		}
		if p, ok := names[k.Name]; ok {
			problems = append(problems, fmt.Sprintf("entry %d: name %q is already used by entry %d", pos, k.Name, p))
			continue
		}
		if p, ok := secrets[k.Secret]; ok {
			problems = append(problems, fmt.Sprintf("entry %d: the key is the same as entry %d's", pos, p))
			continue
		}
		names[k.Name], secrets[k.Secret] = pos, pos
		keys = append(keys, k)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidKeys, strings.Join(problems, "; "))
	}
	return keys, nil
}

func parseKey(entry string, pos int) (Key, error) {
	k := Key{Name: "key" + strconv.Itoa(pos)}
	rest := entry
	if name, secret, ok := strings.Cut(entry, "="); ok {
		if !validName(name) {
			return Key{}, errors.New("the name before '=' must be 1 to 64 letters, digits, '-', '_' or '.' (keys may not contain '=')")
		}
		k.Name, rest = name, secret
	}
	if secret, routes, ok := strings.Cut(rest, "@"); ok {
		rest = secret
		k.Routes = []string{}
		for r := range strings.SplitSeq(routes, "|") {
			r = strings.TrimSpace(r)
			if r == "" {
				return Key{}, errors.New("empty route name after '@'")
			}
			if !slices.Contains(k.Routes, r) {
				k.Routes = append(k.Routes, r)
			}
		}
	}
	if len(rest) < MinKeyLength {
		return Key{}, fmt.Errorf("key is shorter than %d characters", MinKeyLength)
	}
	if strings.ContainsAny(rest, " \t\r\n,=@|") {
		return Key{}, errors.New("key contains whitespace, ',', '=', '@' or '|'")
	}
	k.Secret = rest
	k.digest = sha256.Sum256([]byte(rest))
	return k, nil
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}

// Allows reports whether the client may send calls to the route.
func (k *Key) Allows(route string) bool {
	return k.Routes == nil || slices.Contains(k.Routes, route)
}

// CallbackSecret is the secret that signs the callbacks of the client's
// tokens: hex(HMAC-SHA256(key=the bearer key, message="slackbot-callback-v1")),
// so a client computes it from its own key and no second secret has to be
// handed out. The 64 hex characters (as ASCII bytes) are the HMAC key of
// the signatures.
func (k *Key) CallbackSecret() string {
	m := hmac.New(sha256.New, []byte(k.Secret))
	m.Write([]byte(callbackSecretLabel))
	return hex.EncodeToString(m.Sum(nil))
}

const callbackSecretLabel = "slackbot-callback-v1"

// keyring finds the client of a bearer key in constant time.
type keyring []Key

// match returns the client whose key is presented, comparing SHA-256
// digests of every configured key with crypto/subtle, so the time taken
// says nothing about which key (if any) matched or how much of it did.
func (ks keyring) match(presented string) (*Key, bool) {
	d := sha256.Sum256([]byte(presented))
	found := -1
	for i := range ks {
		eq := subtle.ConstantTimeCompare(d[:], ks[i].digest[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return nil, false
	}
	return &ks[found], true
}

// Keyring finds the API client of a request's bearer key in constant
// time. It is how another door that accepts the same API_KEYS (the MCP
// gateway, handed it by cmd/slackbot) authenticates without parsing the
// keys again.
type Keyring struct{ keys keyring }

// NewKeyring returns the key ring of keys (ParseKeys(API_KEYS)).
func NewKeyring(keys []Key) (*Keyring, error) {
	ks, err := newKeyring(keys)
	if err != nil {
		return nil, err
	}
	return &Keyring{keys: ks}, nil
}

// Authenticate returns the client whose key the request's
// "Authorization: Bearer <key>" header carries, or false.
func (k *Keyring) Authenticate(r *http.Request) (*Key, bool) { return k.keys.authenticate(r) }

// authenticate returns the client of the request's bearer key.
func (ks keyring) authenticate(r *http.Request) (*Key, bool) {
	tok, ok := bearer(r)
	if !ok {
		return nil, false
	}
	return ks.match(tok)
}

// byName returns the client with the given name.
func (ks keyring) byName(name string) (*Key, bool) {
	for i := range ks {
		if ks[i].Name == name {
			return &ks[i], true
		}
	}
	return nil, false
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}
