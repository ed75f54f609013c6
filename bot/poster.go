package bot

import (
	"context"
	"fmt"

	"github.com/slackapprove/slackbot/approval"
)

// This file is a bridge for issue 12 while bot moves onto
// approval.Service: it lets the Service that serves the HTTP API post and
// update cards with bot's rendering. The bot slice of issue 12 replaces it
// with bot's own approval.Poster; delete this file then.

// Post implements approval.Poster: it posts the card of call c of r to
// its route's channel (warming the route's usergroups, so the first click
// need not wait for a lookup) and returns where it went.
func (b *Bot) Post(ctx context.Context, r *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	route := b.route(c.Route)
	if route == nil {
		return approval.MessageRef{}, fmt.Errorf("post card for %s: no route %q", c.ID, c.Route)
	}
	b.auth.Warm(route.Usergroups...)
	return b.post(ctx, route.Channel, b.card(r, c))
}

// Update implements approval.Poster: it re-renders the card of c from r
// in place, first finding (and recording) a card whose message was never
// recorded, and returns where the card is.
func (b *Bot) Update(ctx context.Context, r *approval.Request, c *approval.Call) (approval.MessageRef, error) {
	b.locateCard(ctx, r, c)
	return c.Message, b.updateRendered(ctx, c.Message, b.card(r, c))
}
