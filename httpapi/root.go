package httpapi

import (
	"net/http"
	"time"
)

// home is GET /: the version document, served without authentication.
func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	setLastModified(w, r, time.Now())
	writeJSON(w, http.StatusOK, map[string]any{
		"versions": []any{map[string]any{
			"id":          "v" + MinVersion.String(),
			"max_version": MaxVersion.String(),
			"min_version": MinVersion.String(),
			"status":      "CURRENT",
			"links":       []any{map[string]any{"rel": "self", "href": ""}},
		}},
	})
}
