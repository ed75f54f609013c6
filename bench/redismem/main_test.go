package main

import (
	"strings"
	"testing"
)

func TestPattern(t *testing.T) {
	for in, want := range map[string]string{
		"a:j4lm0AcYBhpRzYfnyZKCUOrfRCNrbMnB3pqlif8haZs": "a:…",
		"deadlines":                     "deadlines",
		"dedupe:event:Ev0REDISMEM1":     "dedupe:event:…",
		"thread:T0FAKE/C0GENERAL/1.2:l": "thread:…:l",
		"proc:redismem":                 "proc:redismem",
	} {
		if got := pattern(in); got != want {
			t.Errorf("pattern(%q) = %q, want %q", in, got, want)
		}
	}
}

// The command measures both paths and finds every kind of key they write,
// each with a TTL.
func TestRunSmall(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"-n", "3", "-hash-max-listpack-value", "64"}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{"| `a:…` | 3 |", "| `run:…` | 3 |", "| `audit` | 1 |", "| `dedupe:event:…` | 3 |", "| `thread:…:l` | 3 |", "| `idem:…` | 3 |", "keys without a TTL: 0"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "WITHOUT A TTL") {
		t.Errorf("a key has no TTL:\n%s", got)
	}
}
