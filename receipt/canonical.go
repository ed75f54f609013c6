package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gowebpki/jcs"
)

// ErrInexactNumber is Canonical's error for arguments holding a number
// that RFC 8785 cannot carry exactly.
var ErrInexactNumber = errors.New("a number in the arguments is not exactly an IEEE 754 double (an integer beyond 2^53, or more digits than a double holds): send it as a string")

// ErrNotJSON is Canonical's error for arguments that are not JSON text.
var ErrNotJSON = errors.New("the arguments are not JSON")

// Canonical returns the RFC 8785 (JCS) canonical form of the JSON object
// args. It refuses text that is not JSON with ErrNotJSON, and arguments
// whose numbers RFC 8785 would round (see ExactNumbers) with
// ErrInexactNumber: two different calls would then share one canonical
// form, and a receipt or a grant for one would cover the other.
func Canonical(args []byte) ([]byte, error) {
	switch {
	case !json.Valid(args):
		// ExactNumbers is false for text that is not JSON too; say which.
		return nil, ErrNotJSON
	case !ExactNumbers(args):
		return nil, ErrInexactNumber
	}
	canon, err := jcs.Transform(args)
	if err != nil {
		return nil, fmt.Errorf("canonical form of the arguments: %w", err)
	}
	return canon, nil
}

// ArgsSHA256 is the receipt's args_sha256 of the JSON object args: the
// base64url (unpadded) SHA-256 of its canonical form (Canonical).
func ArgsSHA256(args []byte) (string, error) {
	canon, err := Canonical(args)
	if err != nil {
		return "", err
	}
	return digest(canon), nil
}

// TokenSHA256 is the receipt's tok of a resume token: the base64url
// SHA-256 of its bytes, so a receipt names its request without carrying
// the token that decides it.
func TokenSHA256(token string) string { return digest([]byte(token)) }

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// ExactNumbers reports whether every number in the JSON document doc says
// the same value as the IEEE 754 double RFC 8785 writes for it. When one
// does not (an integer beyond 2^53, more digits than a double holds, an
// exponent out of range), distinct arguments would share a canonical form.
// Its cost is linear in len(doc).
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
		if n, ok := tok.(json.Number); ok && !ExactNumber(string(n)) {
			return false
		}
	}
}

// ExactNumber reports whether the JSON number n says the same value as
// the IEEE 754 double RFC 8785 writes for it: false for an integer beyond
// 2^53 that no double holds, more digits than a double holds, an exponent
// out of range, or text that is not a number. Every reader that turns n
// into a double (JavaScript, RFC 8785, CEL's doubles) then reads the value
// the digits say. Its cost is linear in len(n).
func ExactNumber(n string) bool {
	f, err := strconv.ParseFloat(n, 64)
	return err == nil && decimalValue(n) == decimalValue(strconv.FormatFloat(f, 'g', -1, 64))
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
