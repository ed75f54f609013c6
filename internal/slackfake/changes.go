package slackfake

import (
	"sync"
	"time"
)

// ChangeKind says what changed.
type ChangeKind string

// Change tells a subscriber that the workspace changed; read the details
// with Message, Ephemerals or View.
type Change struct {
	// Seq numbers changes from 1 without gaps; a subscriber that sees a gap
	// missed changes (it read too slowly) and should reload everything.
	Seq      uint64
	Kind     ChangeKind
	Channel  string
	TS       string
	ThreadTS string
	User     string
	ViewID   string
	At       time.Time
}

// subscriberBuffer is how many changes a subscriber may fall behind by
// before it misses some.
const subscriberBuffer = 256

// Subscribe returns a channel of every change from now on, and a function
// that ends the subscription and closes the channel. A subscriber that
// falls more than 256 changes behind misses some (see Change.Seq) rather
// than slowing the server down.
func (s *Server) Subscribe() (<-chan Change, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextSub
	s.nextSub++
	ch := make(chan Change, subscriberBuffer)
	s.subs[id] = ch
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(s.subs, id)
			close(ch)
		})
	}
}

// emit sends e to every subscriber; s.mu is held.
func (s *Server) emit(e Change) {
	s.seq++
	e.Seq = s.seq
	if e.At.IsZero() {
		e.At = s.now()
	}
	for _, ch := range s.subs {
		select {
		case ch <- e:
		default:
		}
	}
}

// Change kinds.
const (
	ChangeMessage        ChangeKind = "message"
	ChangeMessageChanged ChangeKind = "message_changed"
	ChangeMessageDeleted ChangeKind = "message_deleted"
	ChangeEphemeral      ChangeKind = "ephemeral"
	ChangeViewOpened     ChangeKind = "view_opened"
	ChangeViewPushed     ChangeKind = "view_pushed"
	ChangeViewUpdated    ChangeKind = "view_updated"
	ChangeViewClosed     ChangeKind = "view_closed"
)
