package receipt_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/receipt"
)

// No way of printing, logging or marshalling a key shows its private
// half, whether the key is a pointer, a value, or a field of a struct.
func TestKeyNeverShowsItsSeed(t *testing.T) {
	seed := bytes.Repeat([]byte{0xA7}, receipt.SeedSize)
	k, err := receipt.NewKey(seed)
	if err != nil {
		t.Fatal(err)
	}
	type config struct {
		Key  receipt.Key
		Ptr  *receipt.Key
		Name string
	}
	var out strings.Builder
	for _, v := range []any{k, *k, config{*k, k, "c"}, &config{*k, k, "c"}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
			fmt.Fprintf(&out, verb+"\n", v)
		}
		b, _ := json.Marshal(v)
		out.Write(b)
		slog.New(slog.NewTextHandler(&out, nil)).Info("m", "key", v)
		slog.New(slog.NewJSONHandler(&out, nil)).Info("m", "key", v)
	}
	text := strings.ToLower(out.String())
	for _, secret := range []string{
		hex.EncodeToString(seed[:8]), base64.StdEncoding.EncodeToString(seed[:12]), base64.RawURLEncoding.EncodeToString(seed[:12]),
		"167 167 167", "0xa7, 0xa7", "0xa7,0xa7",
	} {
		if strings.Contains(text, strings.ToLower(secret)) {
			t.Fatalf("the seed (%s) shows in:\n%s", secret, out.String())
		}
	}
	if !strings.Contains(out.String(), k.ID()) {
		t.Errorf("the key's id never shows:\n%s", out.String())
	}
}
