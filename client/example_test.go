package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/client"
)

// An agent asks people in Slack whether it may delete a path, waits for
// their decision (long polls, riding out blips), and runs the call only
// if it was approved.
func Example() {
	c, err := client.New(os.Getenv("SLACKBOT_URL"), os.Getenv("SLACKBOT_API_KEY"))
	if err != nil {
		log.Print(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	a, err := c.Create(ctx, client.CreateRequest{
		Approvals: []agentrunner.ToolCallPart{{
			ToolName: "delete_path", ToolCallID: "call_1",
			Args: json.RawMessage(`{"path":"/srv/tmp"}`),
		}},
		Context:        "Cleaning up after the nightly build.",
		IdempotencyKey: "nightly-cleanup-2026-01-02", // safe to repeat
	})
	if err != nil {
		var refused *client.Error
		if errors.As(err, &refused) && refused.Code == client.CodeRouteForbidden {
			log.Print("this key may not ask for deletions")
		}
		log.Printf("slackbot at %s: %v", c.Redacted(), err)
		return
	}
	for a.Pending() {
		next, err := c.Get(ctx, a.Token, 30*time.Second)
		switch {
		case err == nil:
			a = next
		case ctx.Err() == nil && client.IsTransient(err):
			time.Sleep(time.Second) // slackbot restarting: the request waits in Redis
		default:
			_, _ = c.Cancel(context.Background(), a.Token) // nobody needs to decide any more
			log.Print(err)
			return
		}
	}
	if a.Results != nil && a.Results.Approvals["call_1"].Approved {
		fmt.Println("approved by", a.Results.AnsweredBy["call_1"])
	}
}
