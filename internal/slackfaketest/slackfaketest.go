// Package slackfaketest starts internal/slackfake's fake Slack Web API on a
// loopback port for a test. It lives apart from slackfake because it
// needs package testing and net/http/httptest, which slackfake (linked
// into the production binary for `slackbot dev`) must not pull in.
// Only _test.go files import it.
package slackfaketest

import (
	"net/http/httptest"
	"testing"

	"github.com/slackapprove/slackbot/internal/slackfake"
)

// NewTestServer starts a fake workspace on a loopback port for the test
// and closes it when the test ends. Point slack-go at it with
// slack.OptionAPIURL(APIURL(ts)).
func NewTestServer(t testing.TB, opts ...slackfake.Option) (*slackfake.Server, *httptest.Server) {
	t.Helper()
	s := slackfake.New(opts...)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

// APIURL returns the Slack API base URL of a server started with
// NewTestServer, ending in "/api/" as slack-go expects.
func APIURL(ts *httptest.Server) string { return ts.URL + "/api/" }
