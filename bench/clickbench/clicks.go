package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/agentrunner"
	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/bot"
	"github.com/slackapprove/slackbot/store"
)

// Workspace ids the bench uses (slackfake's demo workspace).
const (
	teamID    = "T0FAKE"
	alice     = "U0ALICE"
	carol     = "U0CAROL"
	general   = "C0GENERAL"
	cardsChan = "C0APPROVALS" // where runs' cards go (route "bench")
	benchTool = "delete_file"
	callID    = "call_1"
)

// cardSlots is how many card messages the pre-created approvals share.
// Posting one card per approval would make preparing 50,000 clicks take
// longer than the measurements; the click path is the same either way,
// since slackbot only compares the clicked message with the call's, and
// each click still carries its own approval's rendered card, so payloads
// have their real size.
const cardSlots = 512

// slots are card messages the pre-created approvals point at, spread over
// channels as a workspace with many approval channels would be.
type slots []approval.MessageRef

func postSlots(ctx context.Context, api *slack.Client) (slots, error) {
	out := make(slots, cardSlots)
	for i := range out {
		now := time.Now()
		card := bot.Card{
			Token: agentrunner.NewToken(), ToolCallID: callID, Kind: agentrunner.KindApproval, ToolName: benchTool,
			Args: json.RawMessage(`{"path":"slot"}`), Requester: carol, RequesterIsUser: true, SourceChannel: general,
			Route: "bench", CreatedAt: now, ExpiresAt: now.Add(time.Hour), RequiredApprovals: 1, State: approval.CallPending,
		}
		ch, ts, err := api.PostMessageContext(ctx, fmt.Sprintf("C0BENCH%03d", i%64),
			slack.MsgOptionText(bot.ApprovalText(card), false), slack.MsgOptionBlocks(bot.ApprovalBlocks(card)...))
		if err != nil {
			return nil, fmt.Errorf("post card: %w", err)
		}
		out[i] = approval.MessageRef{Channel: ch, ID: ts}
	}
	return out, nil
}

// prepareClicks creates n pending approvals directly through the store, as
// approval.Service.Ask would (one approval call each, route "bench", its card one of
// the slots), and returns one block_actions body per approval: Alice
// clicking Approve. Every body decides a distinct pending call. Each
// approval is created in st and in each of also under the same token, so
// that one body decides one call in each.
func prepareClicks(ctx context.Context, st *store.Store, sl slots, n int, tag string, also ...*store.Store) ([][]byte, error) {
	bodies := make([][]byte, n)
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				b, err := prepareClick(ctx, append([]*store.Store{st}, also...), fmt.Sprintf("%s-%06d", tag, i), sl[i%len(sl)])
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				bodies[i] = b
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return bodies, ctx.Err()
}

func prepareClick(ctx context.Context, stores []*store.Store, name string, msg approval.MessageRef) ([]byte, error) {
	token := agentrunner.NewToken()
	args, _ := json.Marshal(map[string]string{"path": name})
	now := time.Now()
	card := bot.Card{
		Token: token, ToolCallID: callID, Kind: agentrunner.KindApproval, ToolName: benchTool, Args: args,
		Requester: carol, RequesterIsUser: true, SourceChannel: general, Route: "bench",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), RequiredApprovals: 1, State: approval.CallPending,
		AllowDenyReason: true, AllowEdit: true,
	}
	for _, st := range stores {
		if err := createClick(ctx, st, token, args, msg, now); err != nil {
			return nil, err
		}
	}
	blocksJSON, err := json.Marshal(bot.ApprovalBlocks(card))
	if err != nil {
		return nil, err
	}
	return clickBody(alice, msg.Channel, msg.ID, bot.ApprovalText(card), blocksJSON, bot.EncodeAction(token, callID), bot.ActionIDApprove), nil
}

// createClick creates the pending approval of one click in st.
func createClick(ctx context.Context, st *store.Store, token string, args json.RawMessage, msg approval.MessageRef, now time.Time) error {
	rec := &approval.Request{
		Token: token, Origin: approval.Origin{Team: teamID, Channel: general, User: carol},
		Requests: agentrunner.DeferredToolRequests{Approvals: []agentrunner.ToolCallPart{
			{ToolName: benchTool, Args: args, ToolCallID: callID},
		}},
		Calls:     []approval.Call{{ID: callID, Route: "bench", Required: 1, Message: msg}},
		CreatedAt: now, ExpiresAt: now.Add(time.Hour),
	}
	if err := st.Create(ctx, rec); err != nil {
		return fmt.Errorf("create approval: %w", err)
	}
	return nil
}

// clickBody is a block_actions payload shaped like Slack's, with the whole
// message the button is on, form-encoded as Slack posts it.
func clickBody(user, channel, ts, text string, blocksJSON []byte, value, actionID string) []byte {
	payload, _ := json.Marshal(map[string]any{
		"type":       "block_actions",
		"team":       map[string]any{"id": teamID, "domain": "fake"},
		"user":       map[string]any{"id": user, "username": strings.ToLower(user), "team_id": teamID},
		"api_app_id": "A0APP",
		"token":      "x",
		"trigger_id": fmt.Sprintf("%d.trigger", time.Now().UnixNano()),
		"container":  map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false},
		"channel":    map[string]any{"id": channel, "name": "approvals"},
		"message":    map[string]any{"type": "message", "ts": ts, "text": text, "blocks": json.RawMessage(blocksJSON)},
		"actions": []map[string]any{{
			"type": "button", "action_id": actionID, "block_id": bot.BlockIDActions,
			"value": value, "action_ts": fmt.Sprint(time.Now().Unix()),
		}},
	})
	return []byte("payload=" + url.QueryEscape(string(payload)))
}
