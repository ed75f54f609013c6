package routing

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// collectAnchors records every anchor with its offset, so that an alias
// resolves to the nearest anchor of that name before it, as YAML says.
func (d *routesDecoder) collectAnchors(root ast.Node) {
	d.anchors = map[string][]anchorDef{}
	ast.Walk(anchorVisitor(func(a *ast.AnchorNode) {
		name := a.Name.String()
		d.anchors[name] = append(d.anchors[name], anchorDef{offset: a.GetToken().Position.Offset, value: a.Value})
	}), root)
}

type anchorVisitor func(*ast.AnchorNode)

func (v anchorVisitor) Visit(n ast.Node) ast.Visitor {
	if a, ok := n.(*ast.AnchorNode); ok {
		v(a)
	}
	return v
}

// resolve follows anchors, aliases and tags to the node holding the value.
func (d *routesDecoder) resolve(n ast.Node) ast.Node {
	for range 32 { // bounds alias chains and self-referencing aliases
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.AliasNode:
			defs := d.anchors[v.Value.String()]
			off := v.GetToken().Position.Offset
			var target ast.Node
			for _, def := range defs {
				if def.offset < off {
					target = def.value
				}
			}
			if target == nil {
				return v
			}
			n = target
		default:
			return n
		}
	}
	return n
}

func isNull(n ast.Node) bool {
	return n == nil || n.Type() == ast.NullType
}

// mapping returns the fields of a mapping node, applying merge keys (<<).
func (d *routesDecoder) mapping(n ast.Node, what string) ([]field, bool) {
	n = d.resolve(n)
	if _, ok := n.(*ast.AliasNode); ok {
		d.problemAt(n, "%s: unknown alias %s", what, n.String())
		return nil, false
	}
	m, ok := n.(*ast.MappingNode)
	if !ok {
		d.problemAt(n, "%s must be a mapping of fields, got %s", what, describeNode(n))
		return nil, false
	}
	var own, merged []field
	for _, mv := range m.Values {
		if mv.Key.IsMergeKey() {
			merged = append(merged, d.mergeSources(mv.Value, what)...)
			continue
		}
		own = append(own, field{key: mv.Key.String(), keyAt: mv.Key, value: mv.Value})
	}
	// Own fields win over merged ones, as in YAML's merge key.
	out := own
	for _, fl := range merged {
		if !slices.ContainsFunc(out, func(o field) bool { return o.key == fl.key }) {
			out = append(out, fl)
		}
	}
	return out, true
}

func (d *routesDecoder) mergeSources(n ast.Node, what string) []field {
	n = d.resolve(n)
	if seq, ok := n.(*ast.SequenceNode); ok {
		var out []field
		for _, v := range seq.Values {
			for _, fl := range d.mergeSources(v, what) {
				if !slices.ContainsFunc(out, func(o field) bool { return o.key == fl.key }) {
					out = append(out, fl)
				}
			}
		}
		return out
	}
	fields, _ := d.mapping(n, what+": merge key <<")
	return fields
}

// known returns the fields named in names and reports every other one.
func (d *routesDecoder) known(fields []field, what string, names ...string) []field {
	var out []field
	for _, fl := range fields {
		if slices.Contains(names, fl.key) {
			out = append(out, fl)
			continue
		}
		msg := fmt.Sprintf("unknown field %q in %s", fl.key, what)
		if s := closest(fl.key, names); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		} else {
			msg += fmt.Sprintf(" (known fields: %s)", strings.Join(names, ", "))
		}
		d.problemAt(fl.keyAt, "%s", msg)
	}
	return out
}

// closest returns the name within edit distance 2 of s, if any.
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if dist := editDistance(s, n); dist < bestD {
			best, bestD = n, dist
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func describeNode(n ast.Node) string {
	switch n.Type() {
	case ast.MappingType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	case ast.NullType:
		return "nothing"
	case ast.StringType, ast.LiteralType:
		return fmt.Sprintf("the text %q", scalarText(n))
	default:
		return fmt.Sprintf("%s %s", strings.ToLower(n.Type().String()), n.String())
	}
}

func scalarText(n ast.Node) string {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value
	case *ast.LiteralNode:
		return v.Value.Value
	}
	return n.String()
}

func (d *routesDecoder) str(fl field) (string, bool) {
	n := d.resolve(fl.value)
	switch n.(type) {
	case *ast.StringNode, *ast.LiteralNode:
		return scalarText(n), true
	case *ast.NullNode:
		return "", true
	}
	d.problemAt(n, "%s: want text, got %s (quote it if it is text)", fl.key, describeNode(n))
	return "", false
}

func (d *routesDecoder) sequence(fl field) ([]ast.Node, bool) {
	n := d.resolve(fl.value)
	switch v := n.(type) {
	case *ast.SequenceNode:
		return v.Values, true
	case *ast.NullNode:
		return nil, true
	}
	d.problemAt(n, "%s: want a list, got %s", fl.key, describeNode(n))
	return nil, false
}

// itemNode returns the i-th item of a list node, for problem lines.
func (d *routesDecoder) itemNode(list ast.Node, i int) ast.Node {
	if seq, ok := d.resolve(list).(*ast.SequenceNode); ok && i < len(seq.Values) {
		return seq.Values[i]
	}
	return list
}

func (d *routesDecoder) strings(fl field) ([]string, bool) {
	n := d.resolve(fl.value)
	if _, ok := n.(*ast.SequenceNode); !ok && !isNull(n) {
		d.problemAt(n, "%s: want a list, like [\"%s\"], got %s", fl.key, scalarText(n), describeNode(n))
		return nil, false
	}
	items, _ := d.sequence(fl)
	out := make([]string, 0, len(items))
	ok := true
	for _, it := range items {
		s, good := d.str(field{key: fl.key, value: it})
		if !good {
			ok = false
			continue
		}
		out = append(out, s)
	}
	return out, ok
}

func (d *routesDecoder) integer(fl field) (int, bool) {
	n := d.resolve(fl.value)
	if v, ok := n.(*ast.IntegerNode); ok {
		switch x := v.Value.(type) {
		case int64:
			return int(x), true
		case uint64:
			if x <= 1<<31 {
				return int(x), true
			}
		}
	}
	d.problemAt(n, "%s: want a whole number, got %s", fl.key, describeNode(n))
	return 0, false
}

func (d *routesDecoder) boolean(fl field) (bool, bool) {
	n := d.resolve(fl.value)
	if v, ok := n.(*ast.BoolNode); ok {
		return v.Value, true
	}
	d.problemAt(n, "%s: want true or false, got %s", fl.key, describeNode(n))
	return false, false
}

func (d *routesDecoder) duration(fl field) (time.Duration, bool) {
	n := d.resolve(fl.value)
	s, isText := n.(*ast.StringNode)
	if !isText {
		d.problemAt(n, "%s: want a duration like 30m, 2h or 1d, got %s", fl.key, describeNode(n))
		return 0, false
	}
	v, err := parseDuration(s.Value)
	if err != nil {
		d.problemAt(n, "%s: %q is not a duration (like 30m, 2h or 1d)", fl.key, s.Value)
		return 0, false
	}
	if v <= 0 {
		d.problemAt(n, "%s: must be more than zero, got %s", fl.key, s.Value)
		return 0, false
	}
	return v, true
}
