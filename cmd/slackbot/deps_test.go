package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestCode holds DESIGN.md's rule "no test code in the
// production binary": the packages ./cmd/slackbot links include neither
// package testing nor net/http/httptest (a fake Slack started for tests
// belongs in internal/slackfaketest, which only tests import).
func TestBinaryLinksNoTestCode(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to list the binary's packages: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	forbidden := map[string]bool{"testing": true, "net/http/httptest": true}
	var got []string
	for _, pkg := range strings.Fields(string(out)) {
		if forbidden[pkg] || strings.HasPrefix(pkg, "testing/") {
			got = append(got, pkg)
		}
	}
	if len(got) > 0 {
		t.Errorf("the slackbot binary links %v; want no test packages (find who imports them: go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/slackbot)", got)
	}
}
