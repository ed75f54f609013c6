package routing

import (
	"math"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// byteSize decodes a size in bytes: a whole number, or one followed by
// B, KiB or MiB (512B, 64KiB, 4MiB); it must be more than zero.
func (d *routesDecoder) byteSize(fl field) (int64, bool) {
	n := d.resolve(fl.value)
	v, ok := int64(0), false
	switch x := n.(type) {
	case *ast.IntegerNode:
		switch i := x.Value.(type) {
		case int64:
			v, ok = i, true
		case uint64:
			v, ok = int64(min(i, math.MaxInt64)), true
		}
	case *ast.StringNode:
		v, ok = parseByteSize(x.Value)
	}
	if !ok {
		d.problemAt(n, "%s: want a size in bytes like 65536, 64KiB or 4MiB, got %s", fl.key, describeNode(n))
		return 0, false
	}
	if v <= 0 {
		d.problemAt(n, "%s: must be more than zero, got %d", fl.key, v)
		return 0, false
	}
	return v, true
}

// parseByteSize reads 512B, 64KiB or 4MiB (a plain number is an integer
// node, not text).
func parseByteSize(s string) (int64, bool) {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		num, found := strings.CutSuffix(s, u.suffix)
		if !found {
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/u.size {
			return 0, false
		}
		return n * u.size, true
	}
	return 0, false
}
