package bot

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// formValue reads of a verified body what ParseForm + PostFormValue read,
// and refuses what ParseForm refuses before the value.
func TestFormValueMatchesParseForm(t *testing.T) {
	for _, body := range []string{
		"payload=%7B%22type%22%3A%22block_actions%22%7D",
		"a=1&payload=x+y%26z&payload=second",
		"pay%6Coad=escaped+name",
		"other=1",
		"",
		"payload=",
		"payload",
		"bad=%zz&payload=x",
		"a=1;payload=x",
		"payload=%e2%9c%85",
	} {
		verified := httptest.NewRequest(http.MethodPost, "/slack/interactivity", nil)
		verified.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		verified.Body = &verifiedBody{Reader: bytes.NewReader([]byte(body)), raw: []byte(body)}
		got, gotErr := formValue(verified, "payload")

		plain := httptest.NewRequest(http.MethodPost, "/slack/interactivity", strings.NewReader(body))
		plain.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		wantErr := plain.ParseForm()
		want := plain.PostFormValue("payload")
		if (gotErr != nil) != (wantErr != nil) || (wantErr == nil && got != want) {
			t.Errorf("body %q: formValue %q, %v; ParseForm %q, %v", body, got, gotErr, want, wantErr)
		}
	}
}

// BenchmarkClickBody measures what a click costs before its payload is
// decoded: VerifySlack (read and check the signed body) and reading the
// payload field out of the form, by ParseForm (as before) and formValue.
func BenchmarkClickBody(b *testing.B) {
	const secret = "s3cret"
	body := []byte(url.Values{"payload": {cardClickPayload(b)}}.Encode())
	for _, bc := range []struct {
		name string
		read func(r *http.Request) (string, error)
	}{
		{"ParseForm", func(r *http.Request) (string, error) {
			if err := r.ParseForm(); err != nil {
				return "", err
			}
			return r.PostFormValue("payload"), nil
		}},
		{"formValue", func(r *http.Request) (string, error) { return formValue(r, "payload") }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := VerifySlack(secret, slog.New(slog.DiscardHandler), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if p, err := bc.read(r); err != nil || p == "" {
					b.Fatal("no payload", err)
				}
			}))
			header := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
			SignSlackRequest(header, secret, time.Now(), body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				r := &http.Request{Method: http.MethodPost, Header: header, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}
				h.ServeHTTP(nil, r)
			}
		})
	}
}
