package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/internal/apitest"
)

// The document is valid JSON Schema where it has schemas, and every
// schema the handlers can answer with compiles.
func TestOpenAPIDocument(t *testing.T) {
	doc := apitest.Load(t)
	for tmpl, item := range doc.Paths() {
		for method, op := range item.(map[string]any) {
			if method == "parameters" {
				continue
			}
			for code, r := range op.(map[string]any)["responses"].(map[string]any) {
				pointer := "/paths/" + apitest.Escape(tmpl) + "/" + method + "/responses/" + code
				if ref, ok := r.(map[string]any)["$ref"].(string); ok {
					pointer = strings.TrimPrefix(ref, "#")
				}
				t.Run(fmt.Sprintf("%s %s %s", method, tmpl, code), func(t *testing.T) {
					doc.Schema(t, pointer+"/content/application~1json/schema")
				})
			}
		}
	}
	for _, s := range []string{"CreateApprovalRequest", "DeferredToolResultsInput", "OutcomeReport"} {
		doc.Schema(t, "/components/schemas/"+s)
	}
}
