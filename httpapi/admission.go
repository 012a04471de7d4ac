package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/placementd/placementd/httpapi/httpguard"
)

// Admission: the requests that cost a node the most, decoding a request
// body and searching allocation candidates, each take a slot of their
// own kind (Config.MaxBodyDecodes, Config.MaxCandidateSearches). A request
// that finds none free waits at most Config.AdmissionWait, then is
// answered 503 placement.server.busy with Retry-After, and counted by
// Observer.RequestAborted with reason AbortBusy. Small requests never
// wait long for a slot: a slot is held only while the body is decoded,
// or the search runs.
const (
	DefaultMaxBodyDecodes       = 32
	DefaultMaxCandidateSearches = 16
	DefaultAdmissionWait        = 2 * time.Second

	// CodeServerBusy: every slot for such requests was taken.
	CodeServerBusy = "placement.server.busy"
	// AbortBusy is the Observer.RequestAborted reason of a request
	// refused for want of a slot.
	AbortBusy = "busy"

	// The kinds of slot, for the refusal's message (and the tests' hook).
	AdmitBody   = "body"
	AdmitSearch = "search"
)

// admit takes a slot from slots for the request, or answers 503 and
// returns false.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, slots *httpguard.Admission, kind string) (release func(), ok bool) {
	release, ok = slots.Acquire(r.Context())
	if !ok {
		info := infoOf(r)
		if s.cfg.Observer != nil {
			s.cfg.Observer.RequestAborted(info.route, AbortBusy)
		}
		s.cfg.Logger.Debug("request refused: no free slot", "kind", kind, "method", r.Method,
			"route", info.route, "request_id", info.id)
		w.Header().Set("Retry-After", "1")
		what := "request bodies being decoded"
		if kind == AdmitSearch {
			what = "allocation candidate searches"
		}
		writeError(w, r, http.StatusServiceUnavailable,
			fmt.Sprintf("The server is busy: too many %s at once. Retry shortly.", what), CodeServerBusy)
		return nil, false
	}
	if s.onAdmitted != nil {
		s.onAdmitted(kind)
	}
	return release, true
}

// ConnRefusal is the complete HTTP answer written to a connection refused
// past a connection cap (httpguard.Listen): 503 in Placement's error
// format with Retry-After. The request was never read, so it carries
// neither request id nor microversion.
func ConnRefusal() []byte {
	body, _ := pyJSON(errorBody{Errors: []errorItem{{
		Status: http.StatusServiceUnavailable, Title: statusInfo(http.StatusServiceUnavailable).title,
		Detail: "The server has too many open connections. Retry shortly.", Code: CodeServerBusy,
	}}})
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"Retry-After: 1\r\nConnection: close\r\n\r\n%s", len(body), body)
}
