package slackfake_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/slack-go/slack"
)

// FailEvery fails every n-th call with the status, before it changes
// anything, until it is removed.
func TestFailEvery(t *testing.T) {
	s, api, _ := newFake(t)
	s.FailEvery("chat.postMessage", http.StatusInternalServerError, 3)
	var failed []int
	for i := range 7 {
		_, _, err := api.PostMessageContext(t.Context(), "C0APPROVALS", slack.MsgOptionText("x", false))
		var sce slack.StatusCodeError
		switch {
		case errors.As(err, &sce) && sce.Code == http.StatusInternalServerError:
			failed = append(failed, i)
		case err != nil:
			t.Fatalf("post %d: %v", i, err)
		}
	}
	if diff := cmp.Diff([]int{2, 5}, failed); diff != "" {
		t.Errorf("failed posts (-want +got):\n%s", diff)
	}
	if n := len(s.Messages("C0APPROVALS")); n != 5 {
		t.Errorf("got %d messages, want 5 (failed calls post nothing)", n)
	}
	s.FailEvery("chat.postMessage", 0, 0)
	for range 3 {
		if _, _, err := api.PostMessageContext(t.Context(), "C0APPROVALS", slack.MsgOptionText("x", false)); err != nil {
			t.Errorf("after FailEvery was removed: %v", err)
		}
	}
}

// SlowEvery delays every n-th call only.
func TestSlowEvery(t *testing.T) {
	s, api, _ := newFake(t)
	s.SlowEvery("auth.test", 300*time.Millisecond, 2)
	var slow []int
	for i := range 4 {
		start := time.Now()
		if _, err := api.AuthTestContext(t.Context()); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) >= 300*time.Millisecond {
			slow = append(slow, i)
		}
	}
	if diff := cmp.Diff([]int{1, 3}, slow); diff != "" {
		t.Errorf("slow calls (-want +got):\n%s", diff)
	}
}
