package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/httpapi"
)

// Arguments that two parsers would read as two calls — a member named
// twice at any depth, text that is not Unicode, a number no double holds
// — are refused with 400 invalid_request naming where, in args and in
// override_args: no card is posted and the request stays as it was.
func TestOneReadingOfArguments(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(keyBilling, deletion("call_1", "/tmp/x", nil))
	create := func(args string) request {
		return request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals",
			body: `{"approvals":[{"tool_name":"delete_file","tool_call_id":"d1","args":` + args + `}]}`}
	}
	override := func(args string) request {
		return request{key: keyBilling, method: http.MethodPost, path: "/v1/approvals/" + a.Token + "/results",
			body: `{"approvals":{"call_1":{"kind":"tool-approved","override_args":` + args + `}}}`}
	}
	decoy := `{"path":"/tmp/scratch","note":"` + strings.Repeat("x", 3000) + `","path":"/etc/prod"}`
	tests := []struct {
		name string
		req  request
		msg  string
	}{
		{"the decoy", create(decoy), `approvals[0]: args: duplicate member "path" at /`},
		{"an escaped repeat", create(`{"path":"/tmp/a","\u0070ath":"/etc"}`), `duplicate member "path" at /`},
		{"a nested repeat", create(`{"items":[{"path":"/a","path":"/b"}]}`), `duplicate member "path" at /items/0`},
		{"the string form", create(`"{\"path\":\"/a\",\"path\":\"/b\"}"`), `duplicate member "path" at /`},
		{"invalid UTF-8", create("{\"path\":\"/tmp/\xff\"}"), `string at /path is not Unicode text`},
		{"lone surrogates", create(`{"\ud800":"/a","\udbff":"/b"}`), `lone UTF-16 surrogate \ud800`},
		{"an inexact number", create(`{"path":"/a","id":9007199254740993}`), `number 9007199254740993 at /id`},
		{"override_args: the decoy", override(decoy), `override_args: duplicate member "path" at /`},
		{"override_args: a nested repeat", override(`{"path":"/a","opts":{"force":false,"force":true}}`), `duplicate member "force" at /opts`},
		{"override_args: an inexact number", override(`{"path":"/a","n":1e400}`), `number 1e400 at /n`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(tt.req)
			got := resp.apiError(t)
			if resp.status != http.StatusBadRequest || got.Error.Code != httpapi.CodeInvalidRequest || !strings.Contains(got.Error.Message, tt.msg) {
				t.Errorf("got %d %s, want 400 %s saying %q", resp.status, resp.body, httpapi.CodeInvalidRequest, tt.msg)
			}
		})
	}
	if n := e.poster.CardsIn(approvals_); n != 1 {
		t.Errorf("refused requests posted cards: %d cards, want 1", n)
	}
	if got := e.do(request{key: keyBilling, method: http.MethodGet, path: "/v1/approvals/" + a.Token}).approval(t); got.Status != "pending" {
		t.Errorf("a refused override changed the request: %s", got.Status)
	}
}
