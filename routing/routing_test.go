package routing_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/slackapprove/slackbot/routing"
)

func loadFixture(t *testing.T, name string) (*routing.Routes, error) {
	t.Helper()
	return routing.LoadRoutes(filepath.Join("testdata", "routes", name))
}

func TestLoadRoutesValid(t *testing.T) {
	rs, err := loadFixture(t, "valid.yaml")
	if err != nil {
		t.Fatalf("LoadRoutes: %v", err)
	}
	want := &routing.Routes{
		DefaultTimeout: 2 * time.Hour,
		File:           filepath.Join("testdata", "routes", "valid.yaml"),
		Routes: []*routing.Route{{
			Name:              "refunds",
			Line:              4,
			Tools:             []string{"issue_refund", "refund_*"},
			Channels:          []string{"C0SUPPORT"},
			Channel:           "C0APPROVALS",
			Users:             []string{"U0ALICE"},
			Usergroups:        []string{"S0FINANCE"},
			RequiredApprovals: 1,
			Timeout:           30 * time.Minute,
			AutoApprove:       "args.amount <= 100",
			AutoDeny:          "args.amount > 10000 ||\nrequester == \"U0MALLORY\"\n",
		}, {
			Name:              "deletions",
			Line:              20,
			Tools:             []string{"delete_*"},
			Channel:           "G0SECURITY",
			Users:             []string{"U0ALICE", "U0BOB", "W0CAROL"},
			RequiredApprovals: 2,
			AllowSelfApproval: true,
			Timeout:           24 * time.Hour,
		}, {
			// No name: route-N; approvers through a YAML alias.
			Name:              "route-3",
			Line:              30,
			Tools:             []string{"lookup_*"},
			Channel:           "C0APPROVALS",
			Users:             []string{"U0ALICE"},
			Usergroups:        []string{"S0FINANCE"},
			RequiredApprovals: 1,
			Timeout:           2 * time.Hour,
			AutoApprove:       "true",
		}, {
			Name:              "default",
			Line:              36,
			Channel:           "C0APPROVALS",
			Users:             []string{"U0ALICE"},
			RequiredApprovals: 1,
			Timeout:           2 * time.Hour,
		}},
	}
	if diff := cmp.Diff(want, rs, cmpopts.IgnoreUnexported(routing.Route{}, routing.StepUp{})); diff != "" {
		t.Errorf("LoadRoutes(valid.yaml) mismatch (-want +got):\n%s", diff)
	}
}

// Every refusal names the file, the line and the reason; a file with
// several problems reports all of them at once.
func TestLoadRoutesRefused(t *testing.T) {
	tests := []struct {
		file string
		// want holds "LINE: substring of the reason", one per problem, in order.
		want []string
	}{
		{"not_yaml.yaml", []string{"4: not valid YAML"}},
		{"unknown_field.yaml", []string{
			`2: route "refunds" has no approvers`,
			`4: unknown field "aprovers" in route "refunds"; did you mean "approvers"?`,
			`6: unknown field "colour" in route "refunds" (known fields: name, when, channel, approvers`,
		}},
		{"missing_channel.yaml", []string{`8: route "nowhere" has no channel`}},
		{"missing_approvers.yaml", []string{
			`2: route "nobody" has no approvers`,
			`7: route "empty" has no approvers`,
		}},
		{"bad_cel.yaml", []string{
			`6: auto_approve does not compile: Syntax error`,
			`9: auto_deny does not compile: undeclared reference to 'amount' (column 1 of`,
		}},
		{"non_bool_cel.yaml", []string{
			`6: auto_approve must be true or false, but "args.amount" is of type dyn; compare it, e.g. (args.amount) == true`,
			`7: auto_deny must be true or false, but "tool + '!'" is of type string`,
		}},
		{"bad_glob.yaml", []string{
			`4: tools: pattern "refund_[a" is not a valid glob`,
			`5: channels: "#support" is not a Slack channel id`,
		}},
		{"duplicate_names.yaml", []string{`8: route name "refunds" is already used by the route on line 2`}},
		{"bad_duration.yaml", []string{
			`1: default_timeout: "forever" is not a duration`,
			`9: timeout: want a duration like 30m, 2h or 1d, got integer 30`,
			`16: timeout: must be more than zero, got -5m`,
		}},
		{"quorum_zero.yaml", []string{`6: required_approvals must be at least 1, got 0`}},
		{"quorum_too_high.yaml", []string{`6: required_approvals is 3 but route "deletions" lists only 2 approver(s)`}},
		{"many_problems.yaml", []string{
			`4: channel "approvals" is not a Slack channel id`,
			`6: users: "alice" is not a Slack id (like U0123ABCD)`,
			`6: users: U0BOB is listed twice`,
			`7: usergroups: "finance" is not a Slack id (like S0123ABCD)`,
			`8: required_approvals: want a whole number, got the text "two"`,
			`9: allow_self_approval: want true or false, got the text "yes"`,
			`10: route "unreachable" is never used: route "everything" on line 3 above it matches every call`,
			`14: name "none" is reserved`,
			`14: route "route-3" is never used`,
			`18: unknown field "extra" in route "none"`,
		}},
		{"no_routes.yaml", []string{`3: no routes`}},
		{"two_documents.yaml", []string{`5: a routing file holds one YAML document`}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			rs, err := loadFixture(t, tt.file)
			if err == nil {
				t.Fatalf("LoadRoutes(%s) = %d routes, want an error", tt.file, len(rs.Routes))
			}
			if !errors.Is(err, routing.ErrInvalidRoutes) {
				t.Errorf("LoadRoutes(%s) error %v does not wrap ErrInvalidRoutes", tt.file, err)
			}
			var re *routing.RoutesError
			if !errors.As(err, &re) {
				t.Fatalf("LoadRoutes(%s) error is %T, want *routing.RoutesError", tt.file, err)
			}
			var got []string
			for _, p := range re.Problems {
				got = append(got, fmt.Sprintf("%d: %s", p.Line, p.Message))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("LoadRoutes(%s) problems:\n%s\nwant %d problems:\n%s", tt.file, strings.Join(got, "\n"), len(tt.want), strings.Join(tt.want, "\n"))
			}
			for i := range tt.want {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("problem %d: got %q, want %q", i, got[i], tt.want[i])
				}
			}
			// The message a person sees starts every line with FILE:LINE.
			prefix := filepath.Join("testdata", "routes", tt.file) + ":"
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, prefix) {
					t.Errorf("error line %q does not start with %q", line, prefix)
				}
			}
		})
	}
}

func TestParseRoutesEmpty(t *testing.T) {
	for _, src := range []string{"", "# nothing\n", "default_timeout: 1h\n"} {
		_, err := routing.ParseRoutes([]byte(src), "r.yaml")
		if err == nil || !strings.Contains(err.Error(), "routes") {
			t.Errorf("ParseRoutes(%q): got %v, want an error about missing routes", src, err)
		}
	}
}

func TestLoadRoutesMissingFile(t *testing.T) {
	_, err := routing.LoadRoutes(filepath.Join(t.TempDir(), "absent.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadRoutes(absent): got %v, want fs.ErrNotExist", err)
	}
}

// Merge keys and anchors let routes share approvers and settings.
func TestParseRoutesMergeKey(t *testing.T) {
	src := `
routes:
  - &base
    name: refunds
    when: {tools: ["issue_refund"]}
    channel: C0APPROVALS
    approvers: {users: ["U0ALICE", "U0BOB"]}
    required_approvals: 2
  - <<: *base
    name: default
    when: {tools: ["*"], channels: ["*"]}
    required_approvals: 1
`
	rs, err := routing.ParseRoutes([]byte(src), "r.yaml")
	if err != nil {
		t.Fatalf("ParseRoutes: %v", err)
	}
	got := rs.Routes[1]
	if got.Name != "default" || got.Channel != "C0APPROVALS" || got.RequiredApprovals != 1 || len(got.Users) != 2 {
		t.Errorf("merged route: got %+v, want name default, channel C0APPROVALS, 2 users, 1 approval", got)
	}
}

func TestRoutesMatch(t *testing.T) {
	rs, err := loadFixture(t, "valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool, channel string
		want          string
	}{
		{"issue_refund", "C0SUPPORT", "refunds"},
		{"refund_partial", "C0SUPPORT", "refunds"},
		// refunds only for runs from C0SUPPORT; elsewhere the catch-all.
		{"issue_refund", "C0OTHER", "default"},
		{"issue_refund", "", "default"},
		{"delete_file", "C0SUPPORT", "deletions"},
		{"delete_customer", "", "deletions"},
		{"lookup_order", "C0X", "route-3"},
		{"send_email", "D0DM", "default"},
		// Globs match the whole name.
		{"xdelete_file", "", "default"},
	}
	for _, tt := range tests {
		got := rs.Match(tt.tool, tt.channel)
		if got == nil || got.Name != tt.want {
			t.Errorf("Match(%q, %q) = %v, want route %s", tt.tool, tt.channel, got, tt.want)
		}
	}

	narrow, err := routing.ParseRoutes([]byte(`
routes:
  - when: {tools: ["issue_refund"]}
    channel: C0APPROVALS
    approvers: {users: ["U0ALICE"]}
`), "narrow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := narrow.Match("delete_file", "C0SUPPORT"); got != nil {
		t.Errorf("Match(delete_file) = route %s, want no route", got.Name)
	}
	var none *routing.Routes
	if got := none.Match("x", ""); got != nil {
		t.Errorf("nil Routes matched %s", got.Name)
	}
}

func TestDescribe(t *testing.T) {
	rs, err := loadFixture(t, "valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rs.Describe(&b); err != nil {
		t.Fatal(err)
	}
	want := `ROUTE      TOOLS                   FROM       POSTS TO     APPROVERS                NEEDS  SELF  TIMEOUT
refunds    issue_refund, refund_*  C0SUPPORT  C0APPROVALS  U0ALICE, @S0FINANCE      1      no    30m
deletions  delete_*                any        G0SECURITY   U0ALICE, U0BOB, W0CAROL  2      yes   1d
route-3    lookup_*                any        C0APPROVALS  U0ALICE, @S0FINANCE      1      no    2h
default    any                     any        C0APPROVALS  U0ALICE                  1      no    2h

Policies (auto_deny is checked first; an error leaves the call to a person):
  refunds  auto_deny     args.amount > 10000 || requester == "U0MALLORY"
  refunds  auto_approve  args.amount <= 100
  route-3  auto_approve  true

First match wins. A call no route matches is denied.
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("Describe mismatch (-want +got):\n%s", diff)
	}
}

func TestDemoRoutes(t *testing.T) {
	rs := routing.DemoRoutes()
	tests := []struct {
		tool      string
		route     string
		approvals int
	}{
		{"issue_refund", "refunds", 1},
		{"delete_file", "deletions", 2},
		{"delete_customer", "deletions", 2},
		{"lookup_order", "default", 1},
	}
	for _, tt := range tests {
		r := rs.Match(tt.tool, "C0GENERAL")
		if r == nil || r.Name != tt.route || r.RequiredApprovals != tt.approvals || r.Channel != "C0APPROVALS" {
			t.Errorf("demo Match(%s) = %+v, want route %s in C0APPROVALS needing %d", tt.tool, r, tt.route, tt.approvals)
		}
	}
}

func TestIsApprover(t *testing.T) {
	r := &routing.Route{Name: "refunds", Users: []string{"U0ALICE"}, Usergroups: []string{"S0BROKEN", "S0FINANCE"}}
	lookups := 0
	members := func(_ context.Context, g string) ([]string, error) {
		lookups++
		switch g {
		case "S0FINANCE":
			return []string{"U0DAVE"}, nil
		default:
			return nil, errors.New("usergroups.users.list: ratelimited")
		}
	}
	tests := []struct {
		user        string
		want        bool
		wantErr     bool
		wantLookups int
	}{
		{"U0ALICE", true, false, 0},
		{"U0DAVE", true, false, 2},
		// Not found, and a group could not be read: the error says so.
		{"U0EVE", false, true, 2},
		{"", false, false, 0},
	}
	for _, tt := range tests {
		lookups = 0
		got, err := r.IsApprover(t.Context(), tt.user, members)
		if got != tt.want || (err != nil) != tt.wantErr || lookups != tt.wantLookups {
			t.Errorf("IsApprover(%q) = %v, %v after %d lookups; want %v, error %v, %d lookups",
				tt.user, got, err, lookups, tt.want, tt.wantErr, tt.wantLookups)
		}
	}
	if _, err := r.IsApprover(t.Context(), "U0EVE", nil); err == nil {
		t.Error("IsApprover with usergroups and no lookup: got no error")
	}
}

func TestDurations(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"30m", 30 * time.Minute},
		{"1h30m", 90 * time.Minute},
		{"2d", 48 * time.Hour},
		{"1d12h", 36 * time.Hour},
	}
	for _, tt := range tests {
		src := fmt.Sprintf("default_timeout: %s\nroutes:\n  - channel: C0A1\n    approvers: {users: [U0A1]}\n", tt.in)
		rs, err := routing.ParseRoutes([]byte(src), "d.yaml")
		if err != nil {
			t.Errorf("default_timeout %s: %v", tt.in, err)
			continue
		}
		if rs.DefaultTimeout != tt.want || rs.Routes[0].Timeout != tt.want {
			t.Errorf("default_timeout %s: got %v (route %v), want %v", tt.in, rs.DefaultTimeout, rs.Routes[0].Timeout, tt.want)
		}
	}
}
