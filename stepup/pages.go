package stepup

import (
	"bytes"
	"embed"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/slackapprove/slackbot/approval"
)

// The pages' script, style and template are embedded: nothing is loaded
// from anywhere but slackbot, and the CSP forbids anything inline.
//
//go:embed assets
var assetFS embed.FS

var pageTmpl = template.Must(template.ParseFS(assetFS, "assets/page.html"))

// assets serves the script and the style under /step-up/assets/.
func assets() http.Handler {
	sub, _ := fs.Sub(assetFS, "assets")
	files := http.FileServerFS(sub)
	return http.StripPrefix("/step-up/assets/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, ".js") && !strings.HasSuffix(r.URL.Path, ".css") {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	}))
}

// page is what the one template lays out.
type page struct {
	Kind    string // "stepup", "register", "totp", "message"
	Title   string
	Heading string
	Lead    string
	Calls   []callView
	Extra   string
	Message string
	OK      bool
	// Options, Action and Ceremony ("get" or "create") start a WebAuthn
	// ceremony; Button is its one primary button.
	Options  string
	Action   string
	Ceremony string
	Button   string
	Name     string
	// Assert, when set, is an assertion the script asks of an existing
	// passkey first (JSON for data-assert), posted as "assertion" with
	// the ceremony's answer (or alone, with CodeLabel's code).
	Assert string
	// CodeLabel, when set, puts a code field (#code) in the ceremony's
	// form; Current puts a field for the code of the app being replaced
	// (#current) in the TOTP form.
	CodeLabel string
	Current   bool
	// TOTPAction posts a one-time code; Secret and URI are shown while
	// enrolling.
	TOTPAction string
	TOTPButton string
	Secret     string
	URI        string
	Link       string
	LinkText   string
	// Note is Config.Note, on the pages that ask for a passkey.
	Note string
}

// callView is a call as the card shows it, in plain text.
type callView struct {
	Tool, Lead, Label, Text string
	Cut                     bool
	Requester               string
	Expires                 string
}

func (h *Handler) render(w http.ResponseWriter, status int, p page) {
	if p.Options != "" {
		p.Note = h.cfg.Note
	}
	var buf bytes.Buffer
	if err := pageTmpl.ExecuteTemplate(&buf, "page", p); err != nil {
		h.cfg.Log.Error("stepup: render page", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// refuse answers with a page that says what happened and that nothing
// changed.
func (h *Handler) refuse(w http.ResponseWriter, status int, heading, text string) {
	h.render(w, status, page{Kind: "message", Title: heading, Heading: heading, Message: text})
}

// answer is the JSON a ceremony's POST returns; the page shows Message.
type answer struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

func writeAnswer(w http.ResponseWriter, status int, ok bool, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(answer{OK: ok, Message: msg})
}

// jsonAttr is v as JSON, for a data- attribute (html/template escapes
// it).
func jsonAttr(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// textMarks writes approval's words as plain text: the page shows user
// ids as written, since it has no directory to name them.
type textMarks struct{}

func (textMarks) Strong(s string) string { return s }
func (textMarks) Person(who string) string {
	if who == "" {
		return ""
	}
	return "@" + strings.TrimPrefix(who, "@")
}
func (textMarks) Group(id string) string { return "@" + id }
func (textMarks) Place(id string) string { return "#" + id }
func (textMarks) Name(s string) string   { return s }
func (textMarks) Code(s string, max int) string {
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}
func (textMarks) Time(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 MST") }

// maxShown caps the text of one call on the page; the card and App Home
// have the rest.
const maxShown = 64 << 10

// viewOf lays out a call's view as the card shows it: the tool, the
// change (a command, a diff) or else the arguments that would run, who
// asked, the route and the expiry.
func viewOf(v approval.CallView) callView {
	m := textMarks{}
	// The requester's line names the route too, as on the card.
	cv := callView{Tool: v.ToolName, Requester: approval.RequesterLine(v, m)}
	if v.ToolLabel != "" {
		cv.Tool = v.ToolLabel
	}
	if !v.ExpiresAt.IsZero() {
		cv.Expires = m.Time(v.ExpiresAt)
	}
	change, args := v.Change, v.Args
	if len(v.OverrideArgs) > 0 {
		change, args = v.EditedChange, v.OverrideArgs
	}
	if change != nil {
		cv.Lead, cv.Label, cv.Text, cv.Cut = change.Lead(), change.Label(), change.Text, change.Cut
		if len(change.Rest) > 0 {
			cv.Text += "\n\nOther arguments: " + string(change.Rest)
		}
	} else {
		cv.Label = "Arguments"
		var pretty bytes.Buffer
		if json.Indent(&pretty, args, "", "  ") == nil {
			cv.Text = pretty.String()
		} else {
			cv.Text = string(args)
		}
	}
	// What the card reveals the page reveals too: invisible and
	// reordering characters as \uXXXX, so the call looks as it is.
	cv.Tool, cv.Lead, cv.Requester = approval.Reveal(cv.Tool, false), approval.Reveal(cv.Lead, false), approval.Reveal(cv.Requester, false)
	cv.Text = approval.Reveal(cv.Text, true)
	if len(cv.Text) > maxShown {
		cut := maxShown
		for cut > 0 && cv.Text[cut] >= 0x80 && cv.Text[cut] < 0xC0 {
			cut--
		}
		cv.Text, cv.Cut = cv.Text[:cut], true
	}
	return cv
}
