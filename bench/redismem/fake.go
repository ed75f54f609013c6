package main

import (
	"net"
	"net/http"
	"time"

	"github.com/slackapprove/slackbot/internal/slackfake"
)

// serveFake serves a fake Slack Web API with the demo workspace on
// loopback and returns it with its API URL.
func serveFake() (*slackfake.Server, string, func(), error) {
	fake := slackfake.New(slackfake.WithDemoWorkspace())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	srv := &http.Server{Handler: fake, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return fake, "http://" + ln.Addr().String() + "/api/", func() { _ = srv.Close() }, nil
}
