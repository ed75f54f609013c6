package bot

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

// MaxSlackBody bounds the body of a request from Slack. Interactivity
// payloads carry the whole message's blocks, so allow well above the
// largest message slackbot posts.
const MaxSlackBody = 1 << 20

// VerifySlack passes on only requests signed with secret within Slack's
// five-minute window. It checks the signature on the raw body before
// anything parses it, and restores the body for next. Anything else gets
// 401 (bad or stale signature) or 413 (too large) and changes nothing.
func VerifySlack(secret string, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(w, r)
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		sv, err := slack.NewSecretsVerifier(r.Header, secret)
		if err == nil {
			_, _ = sv.Write(body)
			err = sv.Ensure()
		}
		if err != nil {
			reason := "invalid signature"
			if errors.Is(err, slack.ErrExpiredTimestamp) {
				reason = "stale timestamp"
			} else if r.Header.Get("X-Slack-Signature") == "" || r.Header.Get("X-Slack-Request-Timestamp") == "" {
				reason = "missing signature headers"
			}
			log.WarnContext(r.Context(), "slack request refused", "path", r.URL.Path, "reason", reason, "remote", r.RemoteAddr)
			http.Error(w, "slack signature verification failed: "+reason, http.StatusUnauthorized)
			return
		}
		r.Body = &verifiedBody{Reader: bytes.NewReader(body), raw: body}
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// readBody reads r's body, at most MaxSlackBody, into one buffer of its
// declared length when it declares one (io.ReadAll would grow a buffer from
// 512 bytes, copying it each time).
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, MaxSlackBody)
	if r.ContentLength <= 0 || r.ContentLength > MaxSlackBody {
		return io.ReadAll(body)
	}
	buf := make([]byte, 0, r.ContentLength+1) // +1: room to read EOF without growing
	for {
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return nil, err
		case len(buf) == cap(buf): // longer than declared
			rest, err := io.ReadAll(body)
			return append(buf, rest...), err
		}
	}
}

// verifiedBody is a request body VerifySlack checked: a handler behind it
// may read it, or take the bytes as they are (formValue), without a copy.
type verifiedBody struct {
	*bytes.Reader
	raw []byte
}

func (*verifiedBody) Close() error { return nil }

// SignSlackRequest sets the headers Slack sends with a request signed with
// secret at ts (v0 signature over "v0:<ts>:<body>"). The dev emulator and
// tests use it to send payloads exactly as Slack would.
func SignSlackRequest(h http.Header, secret string, ts time.Time, body []byte) {
	stamp := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + stamp + ":"))
	mac.Write(body)
	h.Set("X-Slack-Request-Timestamp", stamp)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
}

// formValue is r.PostFormValue(key) for the form bodies Slack posts
// (one field, payload): of a body VerifySlack checked it unescapes the
// fields in place, instead of copying the body and filling two maps
// (ParseForm); other bodies go through ParseForm. A malformed field is an
// error, as ParseForm makes it.
func formValue(r *http.Request, key string) (string, error) {
	vb, ok := r.Body.(*verifiedBody)
	if !ok || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if err := r.ParseForm(); err != nil {
			return "", err
		}
		return r.PostFormValue(key), nil
	}
	var out string
	var firstErr error
	found := false
	rest := string(vb.raw) // one copy, shared by the values cut from it
	for rest != "" {
		var field string
		field, rest, _ = strings.Cut(rest, "&")
		if strings.Contains(field, ";") {
			firstErr = cmp.Or(firstErr, errors.New("invalid semicolon separator in query"))
			continue
		}
		name, value, _ := strings.Cut(field, "=")
		name, err := url.QueryUnescape(name)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		value, err = url.QueryUnescape(value)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		if name == key && !found {
			out, found = value, true
		}
	}
	return out, firstErr
}
