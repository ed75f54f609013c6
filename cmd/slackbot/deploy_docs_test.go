package main

// The operator's documents agree with the code and with each other.

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/slack-go/slack"
)

func readDoc(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docSection returns the part of a Markdown document from the heading that
// starts with heading to the next heading of the same level.
func docSection(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading)
	if i < 0 {
		t.Fatalf("no section %q", heading)
	}
	rest := doc[i+1:]
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if j := strings.Index(rest[len(heading):], "\n"+level); j >= 0 {
		return rest[:len(heading)+j]
	}
	return rest
}

var (
	mdFileRE = regexp.MustCompile(`[A-Za-z0-9_./-]+\.md\b`)
	scopeRE  = regexp.MustCompile("`([a-z_]+:[a-z_.]+)`")
)

func TestDeployDocsAgreeWithTheCode(t *testing.T) {
	t.Parallel()
	readme := readDoc(t, filepath.Join(deployDir, "README.md"))
	envExample := readDoc(t, "../../.env.example")

	// Every Markdown file the guide sends the reader to is in the
	// repository (next to the guide, or at the root).
	for _, ref := range mdFileRE.FindAllString(readme, -1) {
		ref = strings.TrimPrefix(ref, "./")
		_, errHere := os.Stat(filepath.Join(deployDir, ref))
		_, errRoot := os.Stat(filepath.Join("../..", filepath.Base(ref)))
		if errHere != nil && errRoot != nil {
			t.Errorf("deploy/README.md points to %s, which is not in the repository", ref)
		}
	}

	// The scopes step 2 explains are exactly the manifest's.
	file := filepath.Join(deployDir, "slack-app-manifest.yaml")
	var m slack.Manifest
	decodeYAML(t, file, yamlDocs(t, file)[0], &m, yaml.DisallowUnknownField())
	var documented []string
	for _, s := range scopeRE.FindAllStringSubmatch(docSection(t, readme, "## 2."), -1) {
		if !slices.Contains(documented, s[1]) {
			documented = append(documented, s[1])
		}
	}
	slices.Sort(documented)
	if got := slices.Sorted(slices.Values(m.OAuthConfig.Scopes.Bot)); !slices.Equal(documented, got) {
		t.Errorf("deploy/README.md step 2 explains scopes %v; the manifest asks for %v", documented, got)
	}

	// Socket Mode is implemented (Config reads SLACK_APP_TOKEN and serve
	// runs bot.SocketMode with it): nothing may call it planned.
	if _, ok := configVars(t)["SLACK_APP_TOKEN"]; !ok {
		t.Fatal("Config no longer reads SLACK_APP_TOKEN: update this test and the docs")
	}
	for name, doc := range map[string]string{"deploy/README.md": readme, ".env.example": envExample} {
		for line := range strings.Lines(doc) {
			l := strings.ToLower(line)
			if strings.Contains(l, "planned") || strings.Contains(l, "not yet available") || strings.Contains(l, "accepted but not used") || strings.Contains(l, "but not used") {
				t.Errorf("%s says something is not implemented yet: %q", name, strings.TrimSpace(line))
			}
		}
	}

	// The compose file's top-level name: needs Compose v2; the guide says so.
	var compose map[string]any
	decodeYAML(t, "docker-compose.yml", yamlDocs(t, filepath.Join(deployDir, "docker-compose.yml"))[0], &compose)
	if _, ok := compose["name"]; ok && !strings.Contains(docSection(t, readme, "## 7a."), "Compose v2") {
		t.Error("docker-compose.yml sets a top-level name:, which Compose v1 refuses, and deploy/README.md step 7a does not say Compose v2 is needed")
	}
}
