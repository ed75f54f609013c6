package slackfake

import (
	"net/http/httptest"
	"testing"
)

// NewTestServer starts a fake workspace on a loopback port for the test
// and closes it when the test ends. Point slack-go at it with
// slack.OptionAPIURL(APIURL(ts)).
func NewTestServer(t testing.TB, opts ...Option) (*Server, *httptest.Server) {
	t.Helper()
	s := New(opts...)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

// APIURL returns the Slack API base URL of a server started with
// NewTestServer, ending in "/api/" as slack-go expects.
func APIURL(ts *httptest.Server) string { return ts.URL + "/api/" }
