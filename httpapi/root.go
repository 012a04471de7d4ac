package httpapi

import (
	"net/http"
	"time"
)

type versionLink struct {
	Rel  string `json:"rel"`
	Href string `json:"href"`
}

// versionDoc keeps upstream's key order.
type versionDoc struct {
	ID         string        `json:"id"`
	MaxVersion string        `json:"max_version"`
	MinVersion string        `json:"min_version"`
	Status     string        `json:"status"`
	Links      []versionLink `json:"links"`
}

// home is GET /: the version document, served without authentication. The
// self link is deliberately relative (""), as upstream's.
func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	setLastModified(w, r, time.Now())
	writeJSON(w, http.StatusOK, map[string][]versionDoc{
		"versions": {{
			ID:         "v" + MinVersion.String(),
			MaxVersion: MaxVersion.String(),
			MinVersion: MinVersion.String(),
			Status:     "CURRENT",
			Links:      []versionLink{{Rel: "self", Href: ""}},
		}},
	})
}
