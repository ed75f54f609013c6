package routing_test

import (
	"os/exec"
	"strings"
	"testing"
)

// docs/ARCHITECTURE.md, "Import rules": routing knows neither Slack nor
// Redis, and of this module imports only agentrunner (and its mcptools, for MCPServer.Config).
func TestImportsNeitherSlackNorRedis(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	out, err := exec.CommandContext(t.Context(), goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	forbidden := []string{
		"github.com/slack-go/slack",
		"github.com/redis/go-redis/v9",
		"github.com/slackapprove/slackbot/bot",
		"github.com/slackapprove/slackbot/store",
	}
	for _, dep := range deps {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") {
				t.Errorf("routing depends on %s", dep)
			}
		}
	}

	out, err = exec.CommandContext(t.Context(), goTool, "list", "-f", `{{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const own = "github.com/slackapprove/slackbot/"
	allowed := map[string]bool{own + "agentrunner": true, own + "agentrunner/mcptools": true}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, own) && !allowed[imp] {
			t.Errorf("routing imports %s; of this module it may import only agentrunner and agentrunner/mcptools", imp)
		}
	}
}
