package routing_test

import (
	"testing"

	"github.com/slackapprove/slackbot/routing"
)

func TestNamed(t *testing.T) {
	rs := routing.DemoRoutes()
	if r := rs.Named("refunds"); r == nil || r.Name != "refunds" {
		t.Errorf("Named(refunds) = %v, want the refunds route", r)
	}
	if r := rs.Named("nope"); r != nil {
		t.Errorf("Named(nope) = %v, want nil", r)
	}
	var none *routing.Routes
	if r := none.Named("refunds"); r != nil {
		t.Errorf("nil Routes: Named = %v, want nil", r)
	}
}
