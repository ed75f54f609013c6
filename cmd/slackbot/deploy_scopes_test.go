package main

// The Slack app manifest asks for exactly the bot scopes the code needs:
// the scopes Slack documents for each Web API method the production code
// calls, and for each event the manifest subscribes to.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/slack-go/slack"
)

// slackMethod is a Web API method and the bot scopes Slack documents for
// it (docs.slack.dev/reference/methods/<method>, "Required scopes", bot
// tokens). A method that reads conversations needs the history scope of
// each kind of conversation it reads; slackbot reads approval channels,
// public and private.
type slackMethod struct {
	api    string
	scopes []string
}

// slackMethods maps slack-go's client methods (with or without the
// Context suffix) to the Web API method they call. A method the code
// calls that is missing here fails TestManifestScopesAreTheUsedOnes: add
// it with the scopes Slack documents.
var slackMethods = map[string]slackMethod{
	"PostMessage":            {"chat.postMessage", []string{"chat:write"}},
	"UpdateMessage":          {"chat.update", []string{"chat:write"}},
	"PostEphemeral":          {"chat.postEphemeral", []string{"chat:write"}},
	"DeleteMessage":          {"chat.delete", []string{"chat:write"}},
	"GetPermalink":           {"chat.getPermalink", nil}, // Slack: "No scope required"
	"OpenView":               {"views.open", nil},
	"UpdateView":             {"views.update", nil},
	"PushView":               {"views.push", nil},
	"PublishView":            {"views.publish", nil},
	"GetUserGroupMembers":    {"usergroups.users.list", []string{"usergroups:read"}},
	"GetUserGroups":          {"usergroups.list", []string{"usergroups:read"}},
	"AuthTest":               {"auth.test", nil},
	"GetConversationHistory": {"conversations.history", []string{"channels:history", "groups:history"}},
	"GetConversationReplies": {"conversations.replies", []string{"channels:history", "groups:history"}},
	"GetUserInfo":            {"users.info", []string{"users:read"}},
	"GetUsers":               {"users.list", []string{"users:read"}},
	"OpenConversation":       {"conversations.open", []string{"im:write"}},
	"GetConversationInfo":    {"conversations.info", []string{"channels:read", "groups:read"}},
}

// eventScopes are the bot scopes Slack documents for each Events API
// event (docs.slack.dev/reference/events/<event>).
var eventScopes = map[string][]string{
	"app_mention":     {"app_mentions:read"},
	"message.im":      {"im:history"},
	"app_home_opened": nil,
}

// slackClientMethods are the names of *slack.Client's Web API methods: the
// names M whose MContext exists too (which leaves out helpers such as
// Debug).
func slackClientMethods() map[string]bool {
	typ := reflect.TypeFor[*slack.Client]()
	names := map[string]bool{}
	for i := range typ.NumMethod() {
		names[typ.Method(i).Name] = true
	}
	api := map[string]bool{}
	for n := range names {
		if base, ok := strings.CutSuffix(n, "Context"); ok && names[base] {
			api[base] = true
		}
	}
	return api
}

// calledSlackMethods returns the slack-go client methods (without the
// Context suffix) that the production Go code under root calls, with a
// place each is called from. Test files, testdata and the fake Slack are
// not production code.
func calledSlackMethods(t *testing.T, root string) map[string]string {
	t.Helper()
	api := slackClientMethods()
	called := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testdata", "slackfake", "slacktest", "node_modules", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		imports := map[string]bool{}
		for _, im := range f.Imports {
			name := strings.Trim(im.Path.Value, `"`)
			name = name[strings.LastIndex(name, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && imports[id.Name] {
				return true // a package's function, not a method
			}
			name := strings.TrimSuffix(sel.Sel.Name, "Context")
			if api[name] {
				if _, seen := called[name]; !seen {
					called[name] = fset.Position(call.Pos()).String()
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return called
}

func TestManifestScopesAreTheUsedOnes(t *testing.T) {
	t.Parallel()
	called := calledSlackMethods(t, "../..")
	want := map[string][]string{} // scope → why
	for _, name := range slices.Sorted(maps.Keys(called)) {
		m, ok := slackMethods[name]
		if !ok {
			t.Errorf("%s calls slack-go's %s, which slackMethods does not know: add its Web API method and the bot scopes Slack documents for it", called[name], name)
			continue
		}
		for _, s := range m.scopes {
			want[s] = append(want[s], m.api)
		}
	}
	// The core of slackbot: if the scan stopped seeing these, it is broken.
	for _, name := range []string{"PostMessage", "UpdateMessage", "GetUserGroupMembers"} {
		if _, ok := called[name]; !ok {
			t.Errorf("the scan of the code found no call of %s: it misses calls", name)
		}
	}

	file := filepath.Join(deployDir, "slack-app-manifest.yaml")
	var m slack.Manifest
	decodeYAML(t, file, yamlDocs(t, file)[0], &m, yaml.DisallowUnknownField())
	if m.Settings.EventSubscriptions != nil {
		for _, ev := range m.Settings.EventSubscriptions.BotEvents {
			scopes, ok := eventScopes[ev]
			if !ok {
				t.Errorf("the manifest subscribes to event %s, which eventScopes does not know: add the scopes Slack documents for it", ev)
			}
			for _, s := range scopes {
				want[s] = append(want[s], "event "+ev)
			}
		}
	}

	got := slices.Sorted(slices.Values(m.OAuthConfig.Scopes.Bot))
	if wantScopes := slices.Sorted(maps.Keys(want)); !slices.Equal(got, wantScopes) {
		for _, s := range wantScopes {
			if !slices.Contains(got, s) {
				t.Errorf("the manifest lacks bot scope %s, needed by %s", s, strings.Join(want[s], ", "))
			}
		}
		for _, s := range got {
			if _, ok := want[s]; !ok {
				t.Errorf("the manifest asks for bot scope %s, which no method the code calls and no event it subscribes to needs", s)
			}
		}
	}
	if len(m.OAuthConfig.Scopes.User) > 0 {
		t.Errorf("the manifest asks for user scopes %v: slackbot acts only as its bot", m.OAuthConfig.Scopes.User)
	}
}
