package fakemodel

import (
	"encoding/json"
	"net/http"
)

// writeJSON answers v as a JSON body, as every fake API does for its
// non-streaming calls.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
