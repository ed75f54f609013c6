package approval

import (
	"fmt"
	"testing"
)

// Moved from httpapi, whose isEnded this was.
func TestEnded(t *testing.T) {
	if !ended(fmt.Errorf("fail abc: %w", ErrFailed)) || ended(fmt.Errorf("fail abc: %w", ErrNotFound)) {
		t.Error("ended: a failed request has ended, an unknown one has not")
	}
}
