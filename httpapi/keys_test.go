package httpapi_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slackapprove/slackbot/httpapi"
	"github.com/slackapprove/slackbot/routing"
)

func TestParseKeys(t *testing.T) {
	const k1, k2, k3 = "0123456789abcdef0123", "fedcba9876543210fedc", "a-very-long-key-of-32-characters"
	type key struct {
		Name, Secret string
		Routes       []string
	}
	tests := []struct {
		name string
		in   string
		want []key
	}{
		{"empty", "", nil},
		{"bare keys are numbered", k1 + "," + k2, []key{{"key1", k1, nil}, {"key2", k2, nil}}},
		{"named", "billing=" + k1, []key{{"billing", k1, nil}}},
		{"restricted", "ops.bot=" + k1 + "@deploys|rollbacks", []key{{"ops.bot", k1, []string{"deploys", "rollbacks"}}}},
		{"bare and restricted", k1 + "@refunds", []key{{"key1", k1, []string{"refunds"}}}},
		{"spaces around entries", " a=" + k1 + " ,\tb=" + k2 + "@r1 | r1 ,c=" + k3, []key{
			{"a", k1, nil}, {"b", k2, []string{"r1"}}, {"c", k3, nil},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := httpapi.ParseKeys(tt.in)
			if err != nil {
				t.Fatalf("ParseKeys: %v", err)
			}
			var got []key
			for _, k := range keys {
				got = append(got, key{k.Name, k.Secret, k.Routes})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseKeysErrors(t *testing.T) {
	const good = "0123456789abcdef0123"
	secretish := "s3cr3t-but-too-short"[:10]
	tests := []struct {
		name string
		in   string
		want string // in the error
	}{
		{"short key", "a=" + good + ",b=" + secretish, "entry 2: key is shorter than 16 characters"},
		{"bad name", "bad name=" + good, "entry 1: the name before '=' must be"},
		{"padded base64", "QUJDREVGR0hJSktMTU5PUFFSU1RVVldY==", "entry 1: key is shorter than 16 characters"},
		{"empty entry", good + ",,x=" + good[1:] + "a", "entry 2 is empty"},
		{"empty route", "a=" + good + "@r1||r2", "entry 1: empty route name after '@'"},
		{"duplicate name", "a=" + good + ",a=" + good + "x", `entry 2: name "a" is already used by entry 1`},
		{"duplicate key", "a=" + good + ",b=" + good, "entry 2: the key is the same as entry 1's"},
		{"key with a bar", "a=" + good + "|x", "entry 1: key contains"},
		{"several problems", "a=short,b=short", "entry 1: key is shorter than 16 characters; entry 2: key is shorter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := httpapi.ParseKeys(tt.in)
			if !errors.Is(err, httpapi.ErrInvalidKeys) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an ErrInvalidKeys saying %q", err, tt.want)
			}
			if strings.Contains(err.Error(), good) || strings.Contains(err.Error(), secretish) {
				t.Errorf("the error repeats a key: %v", err)
			}
		})
	}
}

func TestNewChecksKeyRoutes(t *testing.T) {
	routes, err := routing.ParseRoutes([]byte(routesYAML), "routes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	keys, err := httpapi.ParseKeys("a=0123456789abcdef0123@refunds|refund")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{})
	_, err = httpapi.New(httpapi.Config{Keys: keys, Store: e.store, Waiter: nopWaiter{}, Approvals: e.svc, Routes: routes})
	if !errors.Is(err, httpapi.ErrInvalidKeys) || !strings.Contains(err.Error(), `entry 1 (a) names unknown route "refund"`) {
		t.Errorf("got %v, want the unknown route named", err)
	}
	if _, err := httpapi.New(httpapi.Config{Store: e.store, Waiter: nopWaiter{}, Approvals: e.svc}); err == nil {
		t.Errorf("New without keys: got no error")
	}
}

type nopWaiter struct{ httpapi.Waiter }

func TestKeyringAuthenticate(t *testing.T) {
	keys, err := httpapi.ParseKeys("billing=billing-key-0123456789,ops=ops-key-0123456789ab@ops")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := httpapi.NewKeyring(keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		header, want string
		routes       []string
	}{
		{"Bearer billing-key-0123456789", "billing", nil},
		{"bearer  ops-key-0123456789ab", "ops", []string{"ops"}},
		{"Bearer billing-key-012345678", "", nil},
		{"Basic billing-key-0123456789", "", nil},
		{"", "", nil},
	} {
		r, _ := http.NewRequest(http.MethodPost, "http://x/mcp", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		k, ok := ring.Authenticate(r)
		switch {
		case tt.want == "" && ok:
			t.Errorf("%q: authenticated as %s; want refused", tt.header, k.Name)
		case tt.want != "" && (!ok || k.Name != tt.want || !slices.Equal(k.Routes, tt.routes)):
			t.Errorf("%q: %v %v; want %s with routes %v", tt.header, k, ok, tt.want, tt.routes)
		}
	}
}
