package providertest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// DiffJSON compares got, decoded JSON such as part of a Request's Body,
// with the JSON document want, and reports a difference as what.
func DiffJSON(t testing.TB, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad JSON in test: %v\n%s", what, err, want)
	}
	if d := cmp.Diff(w, got); d != "" {
		b, _ := json.MarshalIndent(got, "", "  ")
		t.Errorf("%s: mismatch (-want +got):\n%s\ngot:\n%s", what, d, b)
	}
}

// MustJSON returns the JSON of v, which a test wrote and which must
// marshal.
func MustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprint("MustJSON: ", err))
	}
	return string(b)
}
