package devui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// The errors of the page's API. writeError maps them to HTTP statuses, in
// this one place.
var (
	// errBadRequest: the request names something that cannot be, such as
	// an unknown user or a value for a field the modal does not have.
	errBadRequest = errors.New("bad request")
	// errNotFound: the message, thread or modal does not exist (any more).
	errNotFound = errors.New("not found")
	// errConflict: the page is behind the workspace, e.g. the button was
	// removed from the message after the page drew it.
	errConflict = errors.New("conflict")
	// errNotJSON: the request is not application/json. Requiring it keeps
	// other web pages from posting here: a cross-site JSON request needs
	// a CORS preflight, which the emulator never grants.
	errNotJSON = errors.New("requests must be application/json")
)

// webhookError is slackbot answering a payload with something other than
// success, or not answering at all.
type webhookError struct {
	URL    string
	Status int    // 0 when no answer arrived
	Body   string // the answer, cut to maxShownBody
	Err    error  // why no answer arrived
}

func (e *webhookError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("slackbot did not answer %s: %v", e.URL, e.Err)
	}
	return fmt.Sprintf("slackbot answered %s with HTTP %d", e.URL, e.Status)
}

func (e *webhookError) Unwrap() error { return e.Err }

// maxRequestBody bounds what the page may send.
const maxRequestBody = 64 << 10

// maxShownBody bounds how much of slackbot's answer the page shows.
const maxShownBody = 4 << 10

// result is the answer to every POST of the page's API.
type result struct {
	OK bool `json:"ok"`
	// Error says what went wrong, for a toast.
	Error string `json:"error,omitempty"`
	// Status and Body are slackbot's answer to the payload, when one was
	// sent.
	Status int    `json:"status,omitempty"`
	Body   string `json:"body,omitempty"`
	// Delivered says whether a payload was sent to slackbot at all; Note
	// explains why not.
	Delivered bool   `json:"delivered"`
	Note      string `json:"note,omitempty"`
	// Channel and TS name the message /post stored.
	Channel string `json:"channel,omitempty"`
	TS      string `json:"ts,omitempty"`
	// Errors are a modal's validation errors by block_id, from Slack's
	// checks or slackbot's response_action "errors".
	Errors map[string]string `json:"errors,omitempty"`
}

// decodeRequest reads a JSON request body of at most maxRequestBody bytes
// into v, refusing unknown fields.
func decodeRequest(w http.ResponseWriter, r *http.Request, v any) error {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		return errNotJSON
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("request is not the expected JSON (%v): %w", err, errBadRequest)
	}
	if dec.More() {
		return fmt.Errorf("request has data after its JSON: %w", errBadRequest)
	}
	return nil
}

// writeError answers err with its status and a result the page shows in
// a toast. Webhook failures are logged here, once.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	res := result{Error: err.Error()}
	var tooBig *http.MaxBytesError
	var hook *webhookError
	status := http.StatusInternalServerError
	switch {
	case errors.As(err, &tooBig):
		status = http.StatusRequestEntityTooLarge
		res.Error = fmt.Sprintf("request body is larger than %d bytes", tooBig.Limit)
	case errors.As(err, &hook):
		status = http.StatusBadGateway
		res.Delivered = hook.Status != 0
		res.Status, res.Body = hook.Status, hook.Body
		h.log.WarnContext(r.Context(), "dev page: slackbot refused a payload", "url", hook.URL, "status", hook.Status, "err", hook.Err, "body", hook.Body)
	case errors.Is(err, errSlackAPI):
		status = http.StatusBadGateway
		h.log.WarnContext(r.Context(), "dev page: the fake Slack API refused a call", "err", err)
	case errors.Is(err, errNotJSON):
		status = http.StatusUnsupportedMediaType
	case errors.Is(err, errBadRequest):
		status = http.StatusBadRequest
	case errors.Is(err, errNotFound):
		status = http.StatusNotFound
	case errors.Is(err, errConflict):
		status = http.StatusConflict
	default:
		h.log.ErrorContext(r.Context(), "dev page", "path", r.URL.Path, "err", err)
	}
	writeJSON(w, status, res)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
