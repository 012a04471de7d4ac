package httpapi

import (
	"time"

	"github.com/placementd/placementd/fsm/candidates"
)

// candidatesTimer starts timing an allocation-candidates query; call what
// it returns with the search's result once it succeeded.
func (s *Server) candidatesTimer() func(res *candidates.Result) {
	if s.cfg.Observer == nil {
		return func(*candidates.Result) {}
	}
	start := time.Now()
	return func(res *candidates.Result) {
		s.cfg.Observer.CandidatesSearched(time.Since(start), len(res.Candidates), res.Steps)
	}
}
