package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// socketRequestTimeout bounds the handling of one Socket Mode request,
// acknowledgement included. Slack wants the acknowledgement within three
// seconds; the longer bound lets a decision that is being recorded when
// the process shuts down still be recorded.
const socketRequestTimeout = 10 * time.Second

// SocketMode receives Slack's events and interactivity over a Socket Mode
// WebSocket (when SLACK_APP_TOKEN is set) instead of the HTTP endpoints.
// Only the transport differs: events go to Events.HandleEvent and
// interactivity to ParseInteraction and Bot.Interact, exactly as they do
// from HandleEvents and HandleInteraction.
//
// Acknowledgements follow the HTTP rules. An interaction is acknowledged
// once its decision is recorded, with Interact's response (e.g. inline
// errors for a modal) as the acknowledgement's payload. An event is
// acknowledged once HandleEvent has accepted it (deduplicated, run started
// in the background); when HandleEvent fails it is not acknowledged, so
// Slack delivers it again.
type SocketMode struct {
	// Client is the Socket Mode connection; see NewSocketModeClient. Run
	// owns it: one Run per Client.
	Client *socketmode.Client
	// Bot handles interactivity.
	Bot *Bot
	// Events handles events; nil acknowledges and ignores them.
	Events *Events
	// Log receives connection changes and failures; nil discards them.
	// Tokens and connection URLs are never logged.
	Log *slog.Logger
}

// NewSocketModeClient returns a Socket Mode client that opens its
// connections with the app-level token appToken (xapp-…) through the Web
// API at apiURL (empty means slack.com). botToken is the client's token
// for any other Web API call. slack-go's own debug output goes to log.
func NewSocketModeClient(botToken, appToken, apiURL string, log *slog.Logger) *socketmode.Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := []slack.Option{slack.OptionAppLevelToken(appToken)}
	if apiURL != "" {
		opts = append(opts, slack.OptionAPIURL(apiURL))
	}
	return socketmode.New(slack.New(botToken, opts...),
		socketmode.OptionLog(slog.NewLogLogger(log.Handler(), slog.LevelDebug)))
}

// Run connects to Slack and handles requests until ctx ends; it
// reconnects whenever Slack asks or the connection drops. Each request is
// handled on its own goroutine, as HTTP requests are, and Run waits for
// the requests in flight before it returns. It returns nil once ctx has
// ended, or the error that stopped the connection for good, such as an
// app token Slack refuses.
func (s *SocketMode) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Client.RunContext(ctx) }()

	var inflight sync.WaitGroup
	defer inflight.Wait()
	for {
		select {
		case <-ctx.Done():
			<-done
			s.log().Info("socket mode stopped")
			return nil
		case err := <-done:
			if ctx.Err() != nil {
				s.log().Info("socket mode stopped")
				return nil
			}
			s.log().Error("socket mode connection failed for good", "err", redactSecrets(err.Error()))
			return fmt.Errorf("socket mode: %w", err)
		case evt := <-s.Client.Events:
			switch evt.Type {
			case socketmode.EventTypeEventsAPI, socketmode.EventTypeInteractive, socketmode.EventTypeSlashCommand:
				if evt.Request == nil {
					s.log().Warn("socket mode request without envelope ignored", "type", evt.Type)
					continue
				}
				inflight.Go(func() {
					// Like an HTTP server draining on shutdown, a request
					// in flight is finished rather than cancelled.
					ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), socketRequestTimeout)
					defer cancel()
					s.handle(ctx, evt)
				})
			default:
				s.lifecycle(evt)
			}
		}
	}
}

// handle acts on one request from Slack and acknowledges it.
func (s *SocketMode) handle(ctx context.Context, evt socketmode.Event) {
	req := evt.Request
	switch evt.Type {
	case socketmode.EventTypeEventsAPI:
		if !s.event(ctx, req, evt.Data) {
			return
		}
		s.ack(ctx, req, nil)
	case socketmode.EventTypeInteractive:
		// The payload is parsed and checked exactly as an HTTP one is.
		cb, err := ParseInteraction(string(req.Payload))
		if err != nil {
			// Left unacknowledged, the person sees Slack's error, as they
			// do when the HTTP handler answers 400.
			s.log().WarnContext(ctx, "interaction refused", "err", err, "envelope_id", req.EnvelopeID)
			return
		}
		s.ack(ctx, req, s.Bot.Interact(ctx, cb))
	default:
		// Slash commands are not slackbot's; acknowledge so Slack does not
		// report a failure.
		s.ack(ctx, req, nil)
	}
}

// event hands an Events API event to Events.HandleEvent and reports whether
// it may be acknowledged.
func (s *SocketMode) event(ctx context.Context, req *socketmode.Request, data any) bool {
	ev, ok := data.(slackevents.EventsAPIEvent)
	if !ok {
		s.log().WarnContext(ctx, "events_api request without an event ignored", "envelope_id", req.EnvelopeID)
		return true
	}
	if s.Events == nil {
		return true
	}
	// slack-go parsed the payload as HandleEvents does; the envelope's
	// event_id, which deduplicates Slack's retries, stays in the raw payload.
	var outer struct {
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal(req.Payload, &outer); err != nil {
		s.log().WarnContext(ctx, "events_api payload without event_id", "err", err, "envelope_id", req.EnvelopeID)
	}
	if err := s.Events.HandleEvent(ctx, outer.EventID, ev); err != nil {
		s.log().WarnContext(ctx, "event not acknowledged; Slack will deliver it again",
			"err", err, "event_id", outer.EventID, "envelope_id", req.EnvelopeID)
		return false
	}
	return true
}

// ack acknowledges req with payload (nil for an empty acknowledgement).
func (s *SocketMode) ack(ctx context.Context, req *socketmode.Request, payload any) {
	if err := s.Client.AckCtx(ctx, req.EnvelopeID, payload); err != nil {
		s.log().ErrorContext(ctx, "socket mode acknowledgement failed", "err", err, "envelope_id", req.EnvelopeID, "type", req.Type)
	}
}

// lifecycle logs what the client says about its connection.
func (s *SocketMode) lifecycle(evt socketmode.Event) {
	log := s.log()
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		attrs := []any{}
		if e, ok := evt.Data.(*slack.ConnectingEvent); ok {
			attrs = append(attrs, "attempt", e.Attempt, "connection", e.ConnectionCount)
		}
		log.Info("socket mode connecting", attrs...)
	case socketmode.EventTypeConnected:
		attrs := []any{}
		if e, ok := evt.Data.(*socketmode.ConnectedEvent); ok {
			// e.Info.URL carries the connection's ticket: never logged.
			attrs = append(attrs, "connection", e.ConnectionCount)
		}
		log.Info("socket mode connected", attrs...)
	case socketmode.EventTypeHello:
		attrs := []any{}
		if r := evt.Request; r != nil {
			attrs = append(attrs, "app_id", r.ConnectionInfo.AppID, "connections", r.NumConnections, "host", r.DebugInfo.Host)
		}
		log.Info("socket mode ready", attrs...)
	case socketmode.EventTypeDisconnect:
		attrs := []any{}
		if r := evt.Request; r != nil {
			attrs = append(attrs, "reason", r.Reason)
		}
		log.Info("socket mode disconnect requested; reconnecting", attrs...)
	case socketmode.EventTypeConnectionError:
		attrs := []any{}
		if e, ok := evt.Data.(*slack.ConnectionErrorEvent); ok {
			attrs = append(attrs, "err", redactSecrets(e.Error()), "attempt", e.Attempt, "backoff", e.Backoff)
		}
		log.Warn("socket mode connection failed; retrying", attrs...)
	case socketmode.EventTypeInvalidAuth:
		log.Error("socket mode: Slack refused the app-level token (SLACK_APP_TOKEN)")
	case socketmode.EventTypeIncomingError:
		attrs := []any{}
		if e, ok := evt.Data.(*slack.IncomingEventError); ok {
			attrs = append(attrs, "err", redactSecrets(e.Error()))
		}
		log.Warn("socket mode read failed", attrs...)
	case socketmode.EventTypeErrorWriteFailed:
		attrs := []any{}
		if e, ok := evt.Data.(*socketmode.ErrorWriteFailed); ok {
			attrs = append(attrs, "err", redactSecrets(errString(e.Cause)))
			if e.Response != nil {
				attrs = append(attrs, "envelope_id", e.Response.EnvelopeID)
			}
		}
		log.Warn("socket mode acknowledgement not sent", attrs...)
	case socketmode.EventTypeErrorBadMessage:
		attrs := []any{}
		if e, ok := evt.Data.(*socketmode.ErrorBadMessage); ok {
			attrs = append(attrs, "err", redactSecrets(errString(e.Cause)))
		}
		log.Warn("socket mode message not understood", attrs...)
	default:
		log.Debug("socket mode event ignored", "type", evt.Type)
	}
}

func (s *SocketMode) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// secretRE matches Slack tokens and the ticket of a Socket Mode URL.
var secretRE = regexp.MustCompile(`\bx(?:app|ox[abpe])-[A-Za-z0-9-]+|ticket=[^&\s"']+`)

// redactSecrets hides Slack tokens and Socket Mode tickets in s, so that an
// error message that happens to quote one (a URL, a request) can be logged.
func redactSecrets(s string) string {
	return secretRE.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, "ticket=") {
			return "ticket=REDACTED"
		}
		kind, _, _ := strings.Cut(m, "-")
		return kind + "-REDACTED"
	})
}
