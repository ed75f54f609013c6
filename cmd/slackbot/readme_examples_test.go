package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The READMEs' TypeScript snippets are whole files under
// clients/typescript/examples, which TestTypeScriptClients type-checks
// under strict (tsconfig.examples.json): a README shows one in a ```ts
// block right after the line <!-- example: examples/NAME.ts -->, and the
// block must be the file, byte for byte.
var (
	exampleReadmes = []string{"README.md", filepath.Join("clients", "typescript", "README.md")}
	exampleMarker  = regexp.MustCompile(`^<!-- example: (examples/[A-Za-z0-9._-]+\.ts) -->$`)
)

// TestReadmeTypeScriptExamples checks every ```ts and ```typescript block
// of the READMEs against the example file its marker names.
func TestReadmeTypeScriptExamples(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	shown := 0
	for _, readme := range exampleReadmes {
		text, err := os.ReadFile(filepath.Join(root, readme))
		if err != nil {
			t.Fatal(err)
		}
		blocks, problems := tsBlocks(readme, string(text))
		for _, p := range problems {
			t.Error(p)
		}
		for _, b := range blocks {
			file, err := os.ReadFile(filepath.Join(root, "clients", "typescript", b.example))
			if err != nil {
				t.Errorf("%s:%d: the ```ts block names %s, which clients/typescript lacks: %v", readme, b.line, b.example, err)
				continue
			}
			if d := firstDifference(b.code, string(file)); d != "" {
				t.Errorf("%s:%d: the ```ts block differs from clients/typescript/%s: %s (copy the file into the README)", readme, b.line, b.example, d)
			}
			shown++
		}
	}
	if shown == 0 {
		t.Errorf("no TypeScript example found in %v: the check checked nothing", exampleReadmes)
	}
}

// tsBlock is a ```ts block of a README: the line its code starts on, the
// example its marker names and its code.
type tsBlock struct {
	line    int
	example string
	code    string
}

// tsBlocks returns the TypeScript blocks of a Markdown text named name,
// and a problem for each block without its marker or never closed.
func tsBlocks(name, text string) (blocks []tsBlock, problems []string) {
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(fence, "```") {
			continue
		}
		lang := strings.TrimPrefix(fence, "```")
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if lang != "ts" && lang != "typescript" {
			i = end
			continue
		}
		if end == len(lines) {
			problems = append(problems, fmt.Sprintf("%s:%d: the ```%s block is never closed", name, i+1, lang))
			break
		}
		m := []string(nil)
		if i > 0 {
			m = exampleMarker.FindStringSubmatch(strings.TrimSpace(lines[i-1]))
		}
		if m == nil {
			problems = append(problems, fmt.Sprintf("%s:%d: the ```%s block is not preceded by <!-- example: examples/NAME.ts -->: "+
				"make it a file under clients/typescript/examples (type-checked under strict) and name it there", name, i+1, lang))
		} else {
			blocks = append(blocks, tsBlock{line: i + 1, example: m[1], code: strings.Join(lines[i+1:end], "\n") + "\n"})
		}
		i = end
	}
	return blocks, problems
}

// firstDifference describes the first line where a README block and its
// file differ, or returns "" when they are the same.
func firstDifference(block, file string) string {
	if block == file {
		return ""
	}
	b, f := strings.Split(block, "\n"), strings.Split(file, "\n")
	for i := 0; i < len(b) || i < len(f); i++ {
		var bl, fl string
		if i < len(b) {
			bl = b[i]
		}
		if i < len(f) {
			fl = f[i]
		}
		if bl != fl || i >= len(b) || i >= len(f) {
			return fmt.Sprintf("at its line %d the README has %q, the file %q", i+1, bl, fl)
		}
	}
	return "they differ"
}

// TestReadmeExampleCheckFinds holds the check to what it must find: a
// block without its marker, and one that is not its file.
func TestReadmeExampleCheckFinds(t *testing.T) {
	t.Parallel()
	text := "intro\n```ts\nconst a = 1;\n```\n<!-- example: examples/x.ts -->\n```typescript\nconst b = 2;\n```\n```sh\nnot ts\n```\n"
	blocks, problems := tsBlocks("R.md", text)
	if len(problems) != 1 || !strings.Contains(problems[0], "R.md:2: the ```ts block is not preceded by <!-- example:") {
		t.Errorf("problems = %q, want the unmarked block at line 2", problems)
	}
	if len(blocks) != 1 || blocks[0].example != "examples/x.ts" || blocks[0].code != "const b = 2;\n" || blocks[0].line != 6 {
		t.Errorf("blocks = %+v, want examples/x.ts at line 6", blocks)
	}
	if d := firstDifference("const b = 2;\n", "const b = 3;\n"); !strings.Contains(d, `line 1 the README has "const b = 2;", the file "const b = 3;"`) {
		t.Errorf("firstDifference = %q", d)
	}
	if d := firstDifference("a\n", "a\nb\n"); !strings.Contains(d, `line 2 the README has "", the file "b"`) {
		t.Errorf("firstDifference of a shorter block = %q", d)
	}
	if _, problems := tsBlocks("R.md", "```ts\nnever closed\n"); len(problems) != 1 || !strings.Contains(problems[0], "never closed") {
		t.Errorf("an unclosed block: %q", problems)
	}
}
