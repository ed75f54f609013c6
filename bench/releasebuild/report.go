package main

import (
	"cmp"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func printBuilds(out io.Writer, builds []*build, n int, redisMode string) error {
	fmt.Fprintf(out, "%s, %s/%s, %d CPUs; %d start-ups of each (alternating), `slackbot dev` against %s Redis\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), n, redisMode)
	fmt.Fprintln(out, "| build | command | size | exec → /healthz 200, median (min–max) | RSS then, median |")
	fmt.Fprintln(out, "|---|---|---:|---:|---:|")
	sizes := make([]int64, len(builds))
	for i, b := range builds {
		st, err := os.Stat(b.path)
		if err != nil {
			return err
		}
		sizes[i] = st.Size()
		ready := make([]time.Duration, len(b.startups))
		rss := make([]int, len(b.startups))
		for j, s := range b.startups {
			ready[j], rss[j] = s.ready, s.rssKB
		}
		slices.Sort(ready)
		slices.Sort(rss)
		fmt.Fprintf(out, "| %s | `%s` | %s | %s (%s–%s) | %.1f MB |\n", b.name, b.command(), mb(sizes[i]),
			ms(ready[len(ready)/2]), ms(ready[0]), ms(ready[len(ready)-1]), float64(rss[len(rss)/2])/1024)
	}
	fmt.Fprintf(out, "\nrelease / baseline size: %.2f\n\n", float64(sizes[1])/float64(sizes[0]))

	// Where the bytes are, by ELF section: what -s -w removes is the
	// symbol table and DWARF; the Go runtime's own tables (pclntab) stay,
	// as panics and profiles need them.
	secs := make([]map[string]int64, len(builds))
	for i, b := range builds {
		s, err := sections(b.path)
		if err != nil {
			return err
		}
		secs[i] = s
	}
	names := map[string]bool{}
	for _, s := range secs {
		for k := range s {
			names[k] = true
		}
	}
	order := slices.SortedFunc(maps.Keys(names), func(a, b string) int { return cmp.Compare(secs[0][b], secs[0][a]) })
	fmt.Fprint(out, "| section |")
	for _, b := range builds {
		fmt.Fprintf(out, " %s |", b.name)
	}
	fmt.Fprint(out, "\n|---|")
	for range builds {
		fmt.Fprint(out, "---:|")
	}
	fmt.Fprintln(out)
	for _, name := range order {
		fmt.Fprintf(out, "| %s |", name)
		for _, s := range secs {
			if v, ok := s[name]; ok {
				fmt.Fprintf(out, " %s |", mb(v))
			} else {
				fmt.Fprint(out, " — |")
			}
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintln(out)
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }

// sections sums the bytes an ELF file's sections take in the file, in
// groups: each DWARF section under .debug_*, the symbol and string tables
// together, the rest by name, small ones under "other".
func sections(path string) (map[string]int64, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (the section table needs an ELF binary: run on Linux)", path, err)
	}
	defer f.Close()
	out := map[string]int64{}
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOBITS || s.Size == 0 {
			continue
		}
		name := s.Name
		switch {
		case strings.HasPrefix(name, ".debug_") || strings.HasPrefix(name, ".zdebug_"):
			name = ".debug_* (DWARF)"
		case name == ".symtab" || name == ".strtab":
			name = ".symtab + .strtab"
		case name == ".text" || name == ".rodata" || name == ".gopclntab" || name == ".data" || name == ".noptrdata" ||
			name == ".typelink" || name == ".itablink" || name == ".go.buildinfo":
		default:
			name = "other"
		}
		// FileSize: the Go linker compresses DWARF, and Size is a
		// compressed section's size once uncompressed.
		out[name] += int64(s.FileSize)
	}
	return out, nil
}

// printSymbols lists the packages and modules whose symbols take the most
// room in bin's file: the sizes go tool nm -size prints, read from the ELF
// symbol table directly so that symbols of sections not stored in the file
// (.bss, .noptrbss: e.g. the FIPS module's 32 MiB DRBG buffer, which nm
// lists as data) are left out.
func printSymbols(out io.Writer, bin string, top int) error {
	f, err := elf.Open(bin)
	if err != nil {
		return err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("%s: %w (measure the unstripped build)", bin, err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return err
	}
	modules := []string{info.Main.Path}
	for _, d := range info.Deps {
		modules = append(modules, d.Path)
	}
	// Longest module path first, so a nested module wins over its parent.
	slices.SortFunc(modules, func(a, b string) int { return cmp.Compare(len(b), len(a)) })

	byPkg := map[string]int64{}
	byMod := map[string]int64{}
	var total int64
	for _, s := range syms {
		if s.Size == 0 || s.Section == elf.SHN_UNDEF || int(s.Section) >= len(f.Sections) ||
			f.Sections[s.Section].Type == elf.SHT_NOBITS {
			continue
		}
		p := symbolPackage(s.Name)
		byPkg[p] += int64(s.Size)
		byMod[moduleOf(p, modules)] += int64(s.Size)
		total += int64(s.Size)
	}
	fmt.Fprintf(out, "Symbols stored in the baseline binary's file (code, read-only and initialised data; "+
		"not the pclntab or DWARF): %s in all.\n\n", mb(total))
	for _, t := range []struct {
		title string
		m     map[string]int64
	}{{"module", byMod}, {"package", byPkg}} {
		fmt.Fprintf(out, "| %s | symbols | share |\n|---|---:|---:|\n", t.title)
		keys := slices.SortedFunc(maps.Keys(t.m), func(a, b string) int { return cmp.Compare(t.m[b], t.m[a]) })
		for _, k := range keys[:min(top, len(keys))] {
			fmt.Fprintf(out, "| %s | %s | %.1f %% |\n", k, mb(t.m[k]), 100*float64(t.m[k])/float64(total))
		}
		fmt.Fprintln(out)
	}
	return nil
}

// symbolPackage is the import path of the package a symbol belongs to:
// "github.com/a/b.(*T).M" → "github.com/a/b", "type:*net/http.Request" →
// "net/http". The path ends at the first dot after its last slash, looked
// for only before any generic instantiation's brackets or a method's
// receiver, which may name other packages. Linker-made symbols with no
// package ("go:buildinfo", "runtime.text" aside) are "(linker)".
func symbolPackage(name string) string {
	if strings.HasPrefix(name, "go:func.") {
		return "(funcdata: stack maps, inlining tables)"
	}
	for _, p := range []string{"type:", "go:itab.", "go:info.", "go:string.", "go:"} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			name = rest
			break
		}
	}
	name = strings.TrimLeft(name, "*[]0123456789")
	if strings.HasPrefix(name, "map[") || strings.HasPrefix(name, "func(") || strings.HasPrefix(name, "struct {") ||
		strings.HasPrefix(name, "interface {") || strings.HasPrefix(name, "chan ") {
		return "(types)"
	}
	head := name
	if i := strings.IndexAny(head, "[("); i >= 0 {
		head = head[:i]
	}
	slash := strings.LastIndexByte(head, '/')
	dot := strings.IndexByte(head[slash+1:], '.')
	if dot < 0 {
		return "(linker)"
	}
	return head[:slash+1+dot]
}

// moduleOf is the module that provides package p: the longest module path
// that is p or a parent of it, "std" for the standard library.
func moduleOf(p string, modules []string) string {
	if strings.HasPrefix(p, "(") {
		return p
	}
	for _, m := range modules {
		if p == m || strings.HasPrefix(p, m+"/") {
			return m
		}
	}
	if first, _, _ := strings.Cut(p, "/"); !strings.Contains(first, ".") {
		return "std"
	}
	return "(unknown module) " + p
}
