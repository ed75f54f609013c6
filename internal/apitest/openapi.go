// Package apitest is what tests of slackbot's HTTP API share, at every
// level (httpapi's handler tests, cmd/slackbot's end-to-end tests): the
// check of every response against the OpenAPI document, and a small
// client that makes the requests and decodes the answers.
package apitest

import (
	"bytes"
	"flag"
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

// Doc checks responses against the OpenAPI document: the status must be
// documented for the path and method, and the body must validate against
// the documented schema (OpenAPI 3.1 schemas are JSON Schema 2020-12).
type Doc struct {
	paths    map[string]any
	compiler *jsonschema.Compiler

	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema
}

// exercised records every "METHOD /path/template" a checked response came
// from, for CheckCoverage.
var exercised sync.Map

// Load parses the embedded OpenAPI document (httpapi.OpenAPI).
func Load(t *testing.T) *Doc {
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
	return &Doc{paths: paths, compiler: c, schemas: map[string]*jsonschema.Schema{}}
}

// Paths returns the document's paths, each template to its path item.
func (d *Doc) Paths() map[string]any { return d.paths }

// Schema compiles the schema at pointer (a JSON pointer into the
// document), failing t if it does not compile.
func (d *Doc) Schema(t *testing.T, pointer string) *jsonschema.Schema {
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
func (d *Doc) template(path string) (string, bool) {
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

// Escape escapes s as one JSON pointer token.
func Escape(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

// Check validates a response (status, header, body) to method path.
func (d *Doc) Check(t *testing.T, method, path string, status int, header http.Header, body []byte) {
	t.Helper()
	if mt, _, _ := mime.ParseMediaType(header.Get("Content-Type")); mt != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, path, header.Get("Content-Type"))
	}
	tmpl, ok := d.template(path)
	item, _ := d.paths[tmpl].(map[string]any)
	op, _ := item[strings.ToLower(method)].(map[string]any)
	if !ok || op == nil {
		// Undocumented paths and methods answer with the error schema.
		want := map[bool]int{true: http.StatusMethodNotAllowed, false: http.StatusNotFound}[ok]
		if status != want {
			t.Errorf("%s %s (undocumented): got status %d, want %d", method, path, status, want)
		}
		d.Validate(t, method, path, "/components/schemas/Error", body)
		return
	}
	exercised.Store(method+" "+tmpl, true)
	responses := op["responses"].(map[string]any)
	code := strconv.Itoa(status)
	r, ok := responses[code].(map[string]any)
	if !ok {
		t.Errorf("%s %s: status %d is not documented (documented: %v): %s", method, path, status, keys(responses), body)
		return
	}
	pointer := "/paths/" + Escape(tmpl) + "/" + strings.ToLower(method) + "/responses/" + code
	if ref, ok := r["$ref"].(string); ok {
		pointer = strings.TrimPrefix(ref, "#")
	}
	d.Validate(t, method, path, pointer+"/content/application~1json/schema", body)
}

// Validate fails t unless body validates against the schema at pointer.
func (d *Doc) Validate(t *testing.T, method, path, pointer string, body []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Errorf("%s %s: body is not JSON (%v): %s", method, path, err, body)
		return
	}
	if err := d.Schema(t, pointer).Validate(v); err != nil {
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

// CheckCoverage fails t unless the tests of this test binary exercised
// every path and method of the document. It only means something when
// every test ran.
func (d *Doc) CheckCoverage(t *testing.T) {
	t.Helper()
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" {
		t.Logf("coverage of the OpenAPI document not checked: -run %s", f.Value)
		return
	}
	for tmpl, item := range d.paths {
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
