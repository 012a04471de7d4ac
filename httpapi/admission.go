package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/placementd/placementd/httpapi/httpguard"
)

// Admission: the requests that cost a node the most take a share of a
// bounded capacity while they run: decoding a request body takes its size
// (at least MinBodyWeight) out of Config.MaxBodyDecodeBytes, searching
// allocation candidates one of Config.MaxCandidateSearches. A request that
// does not fit waits at most Config.AdmissionWait, then is answered 503
// placement.server.busy with Retry-After, and counted by
// Observer.RequestAborted with reason AbortBusy. The share is held only
// while the body is decoded and validated (not while it arrives: a slow
// client holds none), or while the search runs and its answer is
// rendered.
const (
	DefaultMaxBodyDecodeBytes   = 32 << 20
	DefaultMaxCandidateSearches = 16
	DefaultAdmissionWait        = 2 * time.Second
	// MinBodyWeight is what a small body counts for.
	MinBodyWeight = 64 << 10

	// CodeServerBusy: every slot for such requests was taken.
	CodeServerBusy = "placement.server.busy"
	// AbortBusy is the Observer.RequestAborted reason of a request
	// refused for want of a slot.
	AbortBusy = "busy"

	// The kinds of slot, for the refusal's message (and the tests' hook).
	AdmitBody   = "body"
	AdmitSearch = "search"
)

// admit takes weight out of slots for the request, or answers 503 and
// returns false.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, slots *httpguard.Admission, kind string, weight int64) (release func(), ok bool) {
	release, ok = slots.Acquire(r.Context(), weight)
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
