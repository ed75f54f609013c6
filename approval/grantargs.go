package approval

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
)

// ExactNumbers reports whether every number in the JSON document doc says
// the same value as the IEEE 754 double RFC 8785 writes for it. When one
// does not (an integer beyond 2^53, more digits than a double holds, an
// exponent out of range), distinct arguments would share a canonical form,
// so they get no grant (checkGrant refuses it; the GrantStore must not
// keep one). Its cost is linear in len(doc).
func ExactNumbers(doc []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
		n, ok := tok.(json.Number)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || decimalValue(string(n)) != decimalValue(strconv.FormatFloat(f, 'g', -1, 64)) {
			return false
		}
	}
}

// decimalValue writes a JSON number's value as sign, significant digits
// and exponent ("-25e-1" for -2.50), the same for every way to write it;
// zero is "0" whatever its sign. Empty for a malformed number.
func decimalValue(n string) string {
	sign := ""
	if rest, ok := strings.CutPrefix(n, "-"); ok {
		sign, n = "-", rest
	}
	mant, expText, hasExp := strings.Cut(strings.ToLower(n), "e")
	exp := 0
	if hasExp {
		var err error
		if exp, err = strconv.Atoi(expText); err != nil {
			return ""
		}
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	exp -= len(frac)
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	return sign + trimmed + "e" + strconv.Itoa(exp)
}
