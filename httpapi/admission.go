package httpapi

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/placementd/placementd/httpapi/httpguard"
)

// Admission: the requests that cost a node the most take a share of a
// bounded capacity while they run: decoding a request body takes its size
// (at least MinBodyWeight) out of Config.MaxBodyDecodeBytes, searching
// allocation candidates one of Config.MaxCandidateSearches and, as it
// grows, the memory it estimates its answer holds out of
// Config.MaxAnswerBytes (candidates.Budget), of which the rendered
// answer keeps its size until it is sent. A request that does
// not fit waits at most Config.AdmissionWait, then is answered 503
// placement.server.busy with Retry-After, and counted by
// Observer.RequestAborted with reason AbortBusy. The share is held only
// while the body is decoded and validated (not while it arrives: a slow
// client holds none), or while the search runs and its answer is
// rendered (a search that finds no more memory as it grows stops at once,
// 503 busy: waiting while holding memory could leave every search waiting
// on the others); the answer's bytes are held until it is written or its
// client is gone (a client that does not read is cut at the server's
// write timeout), so that clients that never read cannot make the node
// hold their answers without bound. On a follower, a body the cluster
// front forwards to the leader takes its size out of the same capacity
// while the front holds it (ReadForwarded).
const (
	DefaultMaxBodyDecodeBytes   = 32 << 20
	DefaultMaxCandidateSearches = 16
	DefaultAdmissionWait        = 2 * time.Second
	DefaultMaxAnswerBytes       = 128 << 20
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
	AdmitAnswer = "answer"
	// AdmitForward: a body a follower holds while forwarding it to the
	// leader (ReadForwarded).
	AdmitForward = "forward"
)

// admit takes weight out of slots for the request, or answers 503 and
// returns false.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, slots *httpguard.Admission, kind string, weight int64) (release func(), ok bool) {
	release, ok = slots.Acquire(r.Context(), weight)
	if !s.admitted(w, r, kind, ok) {
		return nil, false
	}
	return release, true
}

// admitted answers 503 for a request of kind that got no share (ok
// false), or tells the tests' hook of the share it got.
func (s *Server) admitted(w http.ResponseWriter, r *http.Request, kind string, ok bool) bool {
	if !ok {
		s.refuseBusy(w, r, kind)
		return false
	}
	if s.onAdmitted != nil {
		s.onAdmitted(kind)
	}
	return true
}

// refuseBusy answers 503 placement.server.busy with Retry-After for a
// request of kind that found no free slot, and counts it.
func (s *Server) refuseBusy(w http.ResponseWriter, r *http.Request, kind string) {
	info := infoOf(r)
	if s.cfg.Observer != nil {
		s.cfg.Observer.RequestAborted(info.route, AbortBusy)
	}
	s.cfg.Logger.Debug("request refused: no free slot", "kind", kind, "method", r.Method,
		"route", info.route, "request_id", info.id)
	w.Header().Set("Retry-After", "1")
	what := map[string]string{AdmitBody: "request bodies being decoded", AdmitSearch: "allocation candidate searches",
		AdmitAnswer:  "allocation candidate searches and unsent answers",
		AdmitForward: "request bodies being decoded or forwarded"}[kind]
	writeError(w, r, http.StatusServiceUnavailable,
		fmt.Sprintf("The server is busy: too many %s at once. Retry shortly.", what), CodeServerBusy)
}

// ReadForwarded reads the body of a request that this node's cluster
// front forwards to the leader (cluster/front's BodyReader) and takes the
// body's share of Config.MaxBodyDecodeBytes while the front holds it, so that
// bodies sent to a follower cost it what they cost the leader: a body is
// read as it arrives, without a share (a slow sender holds none), then
// counts its size (not MinBodyWeight: it is held, not decoded) until
// release is called. It reads at most Config.MaxBodyBytes and one byte
// more, so that the leader answers a longer body 413 as this node would
// have. On failure it has answered, in Placement's error format and with
// a request id (the request goes no further): 408 or 400 as decodeBody
// does, or 503 placement.server.busy; it returns ok false.
func (s *Server) ReadForwarded(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	limit := s.cfg.MaxBodyBytes + 1
	announced := r.ContentLength
	if announced > limit {
		announced = limit
	}
	// A refusal goes through the request log (request id, log, metrics)
	// and the microversion (error codes from 1.23).
	answer := func(f http.HandlerFunc) { s.requestLog(negotiateVersion(f)).ServeHTTP(w, r) }
	body, err := readBody(io.LimitReader(r.Body, limit), announced)
	if err != nil {
		answer(func(w http.ResponseWriter, r *http.Request) { answerReadError(w, r, err) })
		return nil, nil, false
	}
	if len(body) == 0 {
		return body, func() {}, true
	}
	release, ok = s.bodySlots.Acquire(r.Context(), int64(len(body)))
	if !ok {
		answer(func(w http.ResponseWriter, r *http.Request) { s.refuseBusy(w, r, AdmitForward) })
		return nil, nil, false
	}
	if s.onAdmitted != nil {
		s.onAdmitted(AdmitForward)
	}
	return body, release, true
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
