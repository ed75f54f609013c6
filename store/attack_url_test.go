package store_test

import (
	"strings"
	"testing"

	"github.com/slackapprove/slackbot/store"
)

// TestAttackRedisURLNeverEchoesPassword: REDIS_URLs an operator may get
// wrong, each holding the password "hunter2XYZ": among them a URL that
// lost its "@host" (a template whose host was empty, a password pasted
// alone), where net/url reads the password as the port and quotes it.
func TestAttackRedisURLNeverEchoesPassword(t *testing.T) {
	for _, u := range []string{
		"redis://:hunter2XYZ",
		"redis://default:hunter2XYZ",
		"redis://default:hunter2XYZ@",
		"rediss://:hunter2XYZ@host:63x79",
		"redis://:hunter2XYZ@[::1",
		"redis://:hunter2XYZ@host:6379:6379",
		"redis+sentinel://:hunter2XYZ",
		"redis+sentinel://:hunter2XYZ@h:26379",
		"redis+sentinel://:hunter2XYZ@h:26379/m?sentinel_password=hunter2XYZ&x=hunter2XYZ",
		"redis+cluster://:hunter2XYZ",
		"redis+cluster://default:hunter2XYZ,h2:6379",
		"redis://default:hunter2XYZ,h2:6379",
		"redis://hunter2XYZ:@host:6379",
	} {
		err := store.CheckURL(u)
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v; want an error without the password", u, err)
		}
	}
}
