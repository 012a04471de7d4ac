package httpapi

import "net/http"

// Placeholder until allocation candidates land.
func (s *Server) listAllocationCandidates(w http.ResponseWriter, r *http.Request) {
	notImplemented(w, r)
}
