package bot

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// VerifySlack passes on a signed body whole (whatever length the request
// declares), readable as a stream and in place, and refuses a body past
// MaxSlackBody with 413 and a bad signature with 401.
func TestVerifySlackReadsTheWholeBody(t *testing.T) {
	const secret = "s3cret"
	var got string
	var gotPayload string
	h := VerifySlack(secret, slog.New(slog.DiscardHandler), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err error
		if gotPayload, err = formValue(r, "payload"); err != nil {
			t.Error(err)
		}
		b, _ := io.ReadAll(r.Body)
		got = string(b)
	}))
	body := "payload=" + strings.Repeat("x", 3000)
	for _, declared := range []int64{int64(len(body)), 10, 100000, -1} {
		req := httptest.NewRequest(http.MethodPost, "/slack/interactivity", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.ContentLength = declared
		SignSlackRequest(req.Header, secret, time.Now(), []byte(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || got != body || gotPayload != body[len("payload="):] {
			t.Errorf("declared %d: status %d, handler read %d bytes (payload %d), want 200 and all %d", declared, rec.Code, len(got), len(gotPayload), len(body))
		}
	}

	big := strings.Repeat("y", MaxSlackBody+1)
	req := httptest.NewRequest(http.MethodPost, "/slack/interactivity", strings.NewReader(big))
	SignSlackRequest(req.Header, secret, time.Now(), []byte(big))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: status %d, want 413", rec.Code)
	}
	req = httptest.NewRequest(http.MethodPost, "/slack/interactivity", strings.NewReader(body))
	SignSlackRequest(req.Header, "another secret", time.Now(), []byte(body))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("bad signature: status %d, want 401", rec.Code)
	}
}
