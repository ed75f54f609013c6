package httpapi_test

import (
	"bytes"
	"flag"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/slackapprove/slackbot/httpapi"
)

const docURL = "mem://slackbot/openapi.json"

// openAPIDoc checks responses against the OpenAPI document: the status
// must be documented for the path and method, and the body must validate
// against the documented schema (OpenAPI 3.1 schemas are JSON Schema
// 2020-12).
type openAPIDoc struct {
	paths    map[string]any
	compiler *jsonschema.Compiler

	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema
}

// exercised records every "METHOD /path/template" a test response came
// from, for TestAPI's coverage check.
var exercised sync.Map

func loadOpenAPI(t *testing.T) *openAPIDoc {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(httpapi.OpenAPI))
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(docURL, doc); err != nil {
		t.Fatal(err)
	}
	paths, _ := doc.(map[string]any)["paths"].(map[string]any)
	return &openAPIDoc{paths: paths, compiler: c, schemas: map[string]*jsonschema.Schema{}}
}

func (d *openAPIDoc) schema(t *testing.T, pointer string) *jsonschema.Schema {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.schemas[pointer]; ok {
		return s
	}
	s, err := d.compiler.Compile(docURL + "#" + pointer)
	if err != nil {
		t.Fatalf("compile %s: %v", pointer, err)
	}
	d.schemas[pointer] = s
	return s
}

// template returns the document's path that matches path.
func (d *openAPIDoc) template(path string) (string, bool) {
	segs := strings.Split(path, "/")
	for tmpl := range d.paths {
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		ok := true
		for i := range ts {
			param := strings.HasPrefix(ts[i], "{") && strings.HasSuffix(ts[i], "}")
			if !(param && segs[i] != "" || ts[i] == segs[i]) {
				ok = false
				break
			}
		}
		if ok {
			return tmpl, true
		}
	}
	return "", false
}

func escape(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

// check validates a response to method path.
func (d *openAPIDoc) check(t *testing.T, method, path string, resp response) {
	t.Helper()
	if mt, _, _ := mime.ParseMediaType(resp.header.Get("Content-Type")); mt != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, path, resp.header.Get("Content-Type"))
	}
	tmpl, ok := d.template(path)
	item, _ := d.paths[tmpl].(map[string]any)
	op, _ := item[strings.ToLower(method)].(map[string]any)
	if !ok || op == nil {
		// Undocumented paths and methods answer with the error schema.
		want := map[bool]int{true: http.StatusMethodNotAllowed, false: http.StatusNotFound}[ok]
		if resp.status != want {
			t.Errorf("%s %s (undocumented): got status %d, want %d", method, path, resp.status, want)
		}
		d.validate(t, method, path, "/components/schemas/Error", resp.body)
		return
	}
	exercised.Store(method+" "+tmpl, true)
	responses := op["responses"].(map[string]any)
	code := strconv.Itoa(resp.status)
	r, ok := responses[code].(map[string]any)
	if !ok {
		t.Errorf("%s %s: status %d is not documented (documented: %v): %s", method, path, resp.status, keys(responses), resp.body)
		return
	}
	pointer := "/paths/" + escape(tmpl) + "/" + strings.ToLower(method) + "/responses/" + code
	if ref, ok := r["$ref"].(string); ok {
		pointer = strings.TrimPrefix(ref, "#")
	}
	d.validate(t, method, path, pointer+"/content/application~1json/schema", resp.body)
}

func (d *openAPIDoc) validate(t *testing.T, method, path, pointer string, body []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Errorf("%s %s: body is not JSON (%v): %s", method, path, err, body)
		return
	}
	if err := d.schema(t, pointer).Validate(v); err != nil {
		t.Errorf("%s %s: body does not match %s:\n%v\nbody: %s", method, path, pointer, err, body)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkCoverage fails t unless the tests exercised every path and method
// of the document. It only means something when every test ran.
func checkCoverage(t *testing.T, doc *openAPIDoc) {
	t.Helper()
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" {
		t.Logf("coverage of the OpenAPI document not checked: -run %s", f.Value)
		return
	}
	for tmpl, item := range doc.paths {
		for method := range item.(map[string]any) {
			if method == "parameters" {
				continue
			}
			key := strings.ToUpper(method) + " " + tmpl
			if _, ok := exercised.Load(key); !ok {
				t.Errorf("no test exercised %s", key)
			}
		}
	}
}

// The document is valid JSON Schema where it has schemas, and every
// schema the handlers can answer with compiles.
func TestOpenAPIDocument(t *testing.T) {
	doc := loadOpenAPI(t)
	for tmpl, item := range doc.paths {
		for method, op := range item.(map[string]any) {
			if method == "parameters" {
				continue
			}
			for code, r := range op.(map[string]any)["responses"].(map[string]any) {
				pointer := "/paths/" + escape(tmpl) + "/" + method + "/responses/" + code
				if ref, ok := r.(map[string]any)["$ref"].(string); ok {
					pointer = strings.TrimPrefix(ref, "#")
				}
				t.Run(fmt.Sprintf("%s %s %s", method, tmpl, code), func(t *testing.T) {
					doc.schema(t, pointer+"/content/application~1json/schema")
				})
			}
		}
	}
	for _, s := range []string{"CreateApprovalRequest", "DeferredToolResultsInput"} {
		doc.schema(t, "/components/schemas/"+s)
	}
}
