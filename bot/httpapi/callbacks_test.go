package httpapi_test

import "testing"

func testCallbacks(t *testing.T)        { t.Skip("todo") }
func testCallbackRedirect(t *testing.T) { t.Skip("todo") }
