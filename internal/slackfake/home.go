package slackfake

import "fmt"

// maxViewBytes is the largest view Slack accepts (view_too_large past it).
const maxViewBytes = 250_000

// ChangeHomePublished: views.publish set a user's Home tab.
const ChangeHomePublished ChangeKind = "home_published"

// WithoutHomeTab makes views.publish answer not_enabled, as Slack does for
// an app whose Home tab is not enabled in its manifest.
func WithoutHomeTab() Option { return func(s *Server) { s.noHome = true } }

// Home returns the Home tab last published for user (views.publish), and
// whether there is one. Its History holds the JSON of earlier versions.
func (s *Server) Home(user string) (View, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.homes[user]
	if !ok {
		return View{}, false
	}
	return v.clone(), true
}

// viewsPublish is views.publish: it creates or replaces user_id's Home
// tab. Slack's rules: a known user, a view of type "home" with the Block
// Kit limits of any view (100 blocks), at most 250 kB, and a hash, when
// given, that matches the current Home (hash_conflict otherwise). Slack
// documents it as Tier 4 (100+ per minute); RateLimit("views.publish",
// ...) makes it answer 429.
func (s *Server) viewsPublish(r *request) (map[string]any, *apiError) {
	user := r.str("user_id")
	if user == "" {
		return nil, &apiError{code: "invalid_arguments", errors: []string{"missing required field: user_id"}}
	}
	if _, ok := s.users[user]; !ok {
		return nil, &apiError{code: "invalid_arguments", errors: []string{"invalid `user_id`"}}
	}
	if s.noHome {
		return nil, errCode("not_enabled")
	}
	if raw, ok := r.json("view"); ok && len(raw) > maxViewBytes {
		return nil, errCode("view_too_large")
	}
	view, raw, blocks, apiErr := readSurface(r, "home")
	if apiErr != nil {
		return nil, apiErr
	}
	v := s.homes[user]
	if h := r.str("hash"); h != "" && (v == nil || h != v.Hash) {
		return nil, errCode("hash_conflict")
	}
	if v == nil {
		s.ids++
		v = &View{ID: fmt.Sprintf("V%010d", s.ids), User: user, Type: "home", Opened: s.now()}
		v.RootViewID = v.ID
		s.homes[user] = v
	} else {
		v.History = append(v.History, v.JSON)
		v.Updated = s.now()
	}
	v.JSON, v.Blocks = raw, blocks
	v.ExternalID = stringField(view, "external_id")
	v.CallbackID = stringField(view, "callback_id")
	v.PrivateMetadata = stringField(view, "private_metadata")
	v.Hash = s.viewHash()
	s.emit(Change{Kind: ChangeHomePublished, ViewID: v.ID, User: user})
	return map[string]any{"view": s.wireView(v, view)}, nil
}
