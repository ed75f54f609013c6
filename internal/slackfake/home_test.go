package slackfake_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackapprove/slackbot/internal/slackfake"
)

func homeView(blocks ...slack.Block) slack.HomeTabViewRequest {
	return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}}
}

func publish(t *testing.T, api *slack.Client, user string, v slack.HomeTabViewRequest, hash string) (*slack.ViewResponse, error) {
	t.Helper()
	req := slack.PublishViewContextRequest{UserID: user, View: v}
	if hash != "" {
		req.Hash = &hash
	}
	return api.PublishViewContext(t.Context(), req)
}

func TestViewsPublishKeepsTheLatestHomePerUser(t *testing.T) {
	s, api, _ := newFake(t)
	if _, ok := s.Home("U0ALICE"); ok {
		t.Fatal("Home before any views.publish: want none")
	}
	first, err := publish(t, api, "U0ALICE", homeView(approvalBlocks("*Waiting for you*")...), "")
	if err != nil {
		t.Fatalf("views.publish: %v", err)
	}
	if first.View.Type != slack.VTHomeTab || first.View.ID == "" || first.View.Hash == "" {
		t.Errorf("views.publish answered view %+v; want type home with an id and a hash", first.View)
	}
	second, err := publish(t, api, "U0ALICE", homeView(approvalBlocks("*Nothing waits for you*")...), first.View.Hash)
	if err != nil {
		t.Fatalf("views.publish with the current hash: %v", err)
	}
	if second.View.ID != first.View.ID {
		t.Errorf("republished Home has id %s, want the same %s", second.View.ID, first.View.ID)
	}
	home, ok := s.Home("U0ALICE")
	if !ok || !strings.Contains(string(home.JSON), "Nothing waits for you") || len(home.History) != 1 || len(home.Blocks) != 2 {
		t.Errorf("Home(U0ALICE) = %s (history %d, blocks %d); want the second version, one earlier", home.JSON, len(home.History), len(home.Blocks))
	}
	if _, ok := s.Home("U0BOB"); ok {
		t.Error("Bob's Home exists although only Alice's was published")
	}
	// A stale hash is refused and changes nothing.
	_, err = publish(t, api, "U0ALICE", homeView(approvalBlocks("stale")...), first.View.Hash)
	if got := slackError(err); got != "hash_conflict" {
		t.Errorf("stale hash: got %v, want hash_conflict", err)
	}
	if home, _ := s.Home("U0ALICE"); strings.Contains(string(home.JSON), "stale") {
		t.Error("a refused views.publish changed the Home")
	}
}

func TestViewsPublishRefusesWhatSlackRefuses(t *testing.T) {
	s, api, _ := newFake(t)
	tooMany := make([]slack.Block, 101)
	for i := range tooMany {
		tooMany[i] = slack.NewDividerBlock()
	}
	long := slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("x", 3001), false, false), nil, nil)
	modal := homeView(slack.NewDividerBlock())
	modal.Type = slack.VTModal
	for _, tc := range []struct {
		name, user string
		view       slack.HomeTabViewRequest
		want       string
	}{
		{"unknown user", "U0NOBODY", homeView(slack.NewDividerBlock()), "invalid_arguments"},
		{"not a home view", "U0ALICE", modal, "invalid_arguments"},
		{"101 blocks", "U0ALICE", homeView(tooMany...), "invalid_arguments"},
		{"section text over 3000", "U0ALICE", homeView(long), "invalid_arguments"},
	} {
		_, err := publish(t, api, tc.user, tc.view, "")
		if got := slackError(err); got != tc.want {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.want)
		}
	}
	if _, ok := s.Home("U0ALICE"); ok {
		t.Error("a refused views.publish created a Home")
	}

	off, offAPI, _ := newFake(t, slackfake.WithoutHomeTab())
	if _, err := publish(t, offAPI, "U0ALICE", homeView(slack.NewDividerBlock()), ""); slackError(err) != "not_enabled" {
		t.Errorf("Home tab disabled: got %v, want not_enabled", err)
	}
	if _, ok := off.Home("U0ALICE"); ok {
		t.Error("not_enabled still published a Home")
	}
}

func TestViewsPublishRateLimit(t *testing.T) {
	s, api, clk := newFake(t)
	s.RateLimit("views.publish", 1, time.Minute)
	if _, err := publish(t, api, "U0ALICE", homeView(slack.NewDividerBlock()), ""); err != nil {
		t.Fatalf("first views.publish: %v", err)
	}
	_, err := publish(t, api, "U0BOB", homeView(slack.NewDividerBlock()), "")
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != time.Minute {
		t.Fatalf("second views.publish within the minute: got %v, want 429 with Retry-After 60s", err)
	}
	if _, ok := s.Home("U0BOB"); ok {
		t.Error("a rate-limited views.publish published")
	}
	clk.Advance(time.Minute)
	if _, err := publish(t, api, "U0BOB", homeView(slack.NewDividerBlock()), ""); err != nil {
		t.Errorf("after Retry-After: %v", err)
	}
	if n := len(s.Calls("views.publish")); n != 3 {
		t.Errorf("recorded %d views.publish calls, want 3", n)
	}
}
