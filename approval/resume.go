package approval

import "context"

// Resumed is told that the request of a run ended (resolved, cancelled,
// failed, or expired) in this process, so that the run continues here at
// once from its saved state, without a trip through the resume queue:
// Config.Resumed. It is called after the caller got its answer, on a
// goroutine the Service owns (Close waits for it), with the request's
// token and run id.
type Resumed func(ctx context.Context, token, runID string) error

// resumeRun hands the run of r, whose request this process just ended, to
// the Resumed port, if r belongs to a run.
func (s *Service) resumeRun(ctx context.Context, r *Request) {
	if s.resumed == nil || r == nil || r.RunID == "" {
		return
	}
	token, runID := r.Token, r.RunID
	s.later(ctx, "resume run", func(ctx context.Context) error { return s.resumed(ctx, token, runID) })
}
