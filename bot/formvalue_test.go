package bot

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
