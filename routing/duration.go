package routing

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// formatDuration writes 30m, 1h30m, 2d rather than Go's 30m0s.
func formatDuration(d time.Duration) string {
	if d <= 0 {
		return d.String()
	}
	var b strings.Builder
	for _, u := range []struct {
		suffix string
		size   time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}} {
		if n := d / u.size; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.suffix)
			d -= n * u.size
		}
	}
	if d > 0 || b.Len() == 0 {
		b.WriteString(d.String())
	}
	return b.String()
}

// parseDuration accepts Go durations and a leading whole number of days:
// "30m", "1h30m", "2d", "1d12h".
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		days = time.Duration(n) * 24 * time.Hour
		s = s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	return days + d, nil
}
