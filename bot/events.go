package bot

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/slack-go/slack/slackevents"

	"github.com/slackapprove/slackbot/approval"
	"github.com/slackapprove/slackbot/runs"
)

// Deduper remembers keys for a while; slackbot uses it so Slack's retries
// of an event start one run.
type Deduper interface {
	// Dedupe reports whether key is new, and remembers it for ttl.
	Dedupe(ctx context.Context, key string, ttl time.Duration) (bool, error)
}

// Starter starts the run of a message (runs.Runs).
type Starter interface {
	StartTurn(t runs.Turn)
}

// Events turns Slack's Events API events into runs: an app_mention or a
// direct message starts a turn of its thread (Runs), once however often
// Slack delivers it (Dedupe).
type Events struct {
	Bot       *Bot
	Runs      Starter
	Dedupe    Deduper
	BotUserID string
	Log       *slog.Logger
}

func (h *Events) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.New(slog.DiscardHandler)
}

// EventDedupeTTL is how long an event id is remembered. Slack retries an
// event three times within about an hour and a half.
const EventDedupeTTL = 2 * time.Hour

// HandleEvents serves POST /slack/events (Events API). Wrap it in
// VerifySlack. It answers url_verification, starts a run for an
// app_mention or a direct message, and publishes the Home tab of a person
// who opened it (app_home_opened); both happen after the ack.
func (h *Events) HandleEvents() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		var outer struct {
			Type      string `json:"type"`
			Challenge string `json:"challenge"`
			EventID   string `json:"event_id"`
		}
		if err := json.Unmarshal(body, &outer); err != nil {
			http.Error(w, "malformed event: "+err.Error(), http.StatusBadRequest)
			return
		}
		if outer.Type == slackevents.URLVerification {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, outer.Challenge)
			return
		}
		ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
		if err != nil {
			http.Error(w, "malformed event: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := h.HandleEvent(r.Context(), outer.EventID, ev); err != nil {
			// Dedupe could not be recorded: let Slack retry later.
			http.Error(w, "temporarily unavailable", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// mentionRE matches a user mention such as <@U123> or <@U123|name>.
var mentionRE = regexp.MustCompile(`<@[A-Z0-9]+(?:\|[^>]*)?>`)

// HandleEvent acts on one Events API event, whatever transport brought it
// (HTTP or Socket Mode). It returns an error only when the event should be
// delivered again.
func (h *Events) HandleEvent(ctx context.Context, eventID string, ev slackevents.EventsAPIEvent) error {
	if h.foreignEvent(ctx, eventID, ev) {
		return nil
	}
	if ev.Type != slackevents.CallbackEvent {
		return nil
	}
	var turn runs.Turn
	var text string
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AppHomeOpenedEvent:
		// The Home tab (not Messages or About): publish it after the ack;
		// a publish replaces the Home, so a redelivery needs no dedupe.
		if e.Tab == "home" && e.User != "" && h.Bot != nil {
			h.Bot.HomeOpened(ctx, e.User)
		}
		return nil
	case *slackevents.AppMentionEvent:
		if e.BotID != "" || e.User == "" || e.User == h.BotUserID {
			return nil
		}
		turn = newTurn(ev.TeamID, e.Channel, e.User, e.TimeStamp, e.ThreadTimeStamp)
		text = e.Text
	case *slackevents.MessageEvent:
		// Direct messages only; channel messages arrive as app_mention.
		if e.ChannelType != "im" || e.BotID != "" || e.SubType != "" || e.User == "" || e.User == h.BotUserID {
			return nil
		}
		turn = newTurn(ev.TeamID, e.Channel, e.User, e.TimeStamp, e.ThreadTimeStamp)
		text = e.Text
	default:
		return nil
	}
	if h.Dedupe != nil && eventID != "" {
		// The dedupe is the one store call before the acknowledgement:
		// it gets the budget a click gets (Slack waits 3 s for events
		// too). Past it the event is not acknowledged, so Slack delivers
		// it again; if the store recorded the id after all, that delivery
		// is taken for a duplicate (reported in the log line below).
		dctx, cancel := context.WithTimeout(ctx, h.ackBudget())
		first, err := h.Dedupe.Dedupe(dctx, "event:"+eventID, EventDedupeTTL)
		cancel()
		if err != nil {
			h.log().ErrorContext(ctx, "dedupe event", "err", err, "event_id", eventID)
			return err
		}
		if !first {
			h.log().InfoContext(ctx, "duplicate event ignored", "event_id", eventID)
			return nil
		}
	}
	turn.Prompt = strings.TrimSpace(mentionRE.ReplaceAllString(text, ""))
	if turn.Prompt == "" {
		turn.Prompt = "Hello"
	}
	h.Runs.StartTurn(turn)
	return nil
}

// ackBudget is the Bot's acknowledgement budget (DefaultAckBudget).
func (h *Events) ackBudget() time.Duration {
	if h.Bot != nil && h.Bot.ackBudget > 0 {
		return h.Bot.ackBudget
	}
	return DefaultAckBudget
}

// newTurn is the turn of a message at ts, in the thread of threadTS if it
// is a reply (else it starts its own thread), written by user: the
// requester of whatever it asks for.
func newTurn(team, channel, user, ts, threadTS string) runs.Turn {
	t := runs.Turn{MessageTS: ts, InThread: threadTS != "" && threadTS != ts}
	if threadTS == "" {
		threadTS = ts
	}
	t.Origin = approval.Origin{Team: team, Channel: channel, ThreadTS: threadTS, User: user}
	return t
}
