package stepup

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"hash"
	"net/url"
	"time"
)

// TOTP per RFC 6238 with the parameters every authenticator app supports:
// HMAC-SHA-1, a 30-second step counted from the Unix epoch, 6 digits. A
// code is accepted for the current step and one step either side (clock
// drift, RFC 6238 §5.2), and a step once used is never accepted again
// (Store.UseTOTPStep), so a code seen over a shoulder cannot be replayed.
const (
	totpStep   = 30 * time.Second
	totpDigits = 6
	totpSkew   = 1
	// totpSecretLen is the secret's length in bytes: 160 bits, the HMAC-SHA-1
	// key length RFC 4226 §4 recommends.
	totpSecretLen = 20
)

// hotp is RFC 4226's HOTP(K, C) truncated to digits decimal digits, over
// the hash h (RFC 6238 allows SHA-1, SHA-256 and SHA-512; slackbot uses
// SHA-1, the tests check all three against the RFC's vectors).
func hotp(h func() hash.Hash, key []byte, counter uint64, digits int) string {
	mac := hmac.New(h, key)
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], counter)
	mac.Write(msg[:])
	sum := mac.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	code := binary.BigEndian.Uint32(sum[off:off+4]) & 0x7fffffff
	mod := uint32(1)
	for range digits {
		mod *= 10
	}
	return fmt.Sprintf("%0*d", digits, code%mod)
}

// totpAt is the TOTP of key at step.
func totpAt(key []byte, step int64) string {
	return hotp(sha1.New, key, uint64(step), totpDigits)
}

// stepOf is the TOTP time step t falls in.
func stepOf(t time.Time) int64 { return t.Unix() / int64(totpStep/time.Second) }

// matchTOTP returns the step code is valid for at now (within the skew),
// or false. Every candidate is compared in constant time.
func matchTOTP(key []byte, code string, now time.Time) (int64, bool) {
	if len(code) != totpDigits {
		return 0, false
	}
	cur := stepOf(now)
	found, step := false, int64(0)
	for d := int64(-totpSkew); d <= totpSkew; d++ {
		if subtle.ConstantTimeCompare([]byte(totpAt(key, cur+d)), []byte(code)) == 1 && !found {
			found, step = true, cur+d
		}
	}
	return step, found
}

// totpSecretText is the secret as people type it into an app: base32
// without padding.
func totpSecretText(secret []byte) string {
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(secret)
}

// otpauthURI is the Key URI an authenticator app imports.
func otpauthURI(issuer, account string, secret []byte) string {
	u := url.URL{Scheme: "otpauth", Host: "totp", Path: "/" + issuer + ":" + account}
	q := url.Values{}
	q.Set("secret", totpSecretText(secret))
	q.Set("issuer", issuer)
	q.Set("algorithm", "SHA1")
	q.Set("digits", "6")
	q.Set("period", "30")
	u.RawQuery = q.Encode()
	return u.String()
}
