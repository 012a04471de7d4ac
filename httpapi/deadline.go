package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/placementd/placementd/fsm/candidates"
)

// Bounds on what one request may cost. Every request has a deadline
// (Config.RequestTimeout) and ends when its client goes away: both are its
// context, which the read barrier, a write waiting for a leader and the
// allocation-candidates search watch. A search also stops when its answer
// would take more memory than Config.CandidatesMaxBytes (or than
// Config.MaxAnswerBytes, which the searches running at once share: see
// admission.go). A request
// stopped so is answered 503 in Placement's error format (the code says
// which bound), counted by Observer.RequestAborted and logged with the
// shape of its query.
const (
	DefaultRequestTimeout          = 30 * time.Second
	DefaultMaxAllocationCandidates = 10000
	// As DefaultMaxAnswerBytes, which bounds a search alone anyway.
	DefaultCandidatesMaxBytes = 128 << 20

	// CodeRequestTimeout: the request passed its deadline.
	CodeRequestTimeout = "placement.request.timeout"
	// CodeQueryTooLarge: the allocation candidates would take more memory
	// than a search may hold.
	CodeQueryTooLarge = "placement.query.too_large"
)

// Reasons given to Observer.RequestAborted.
const (
	AbortTimeout    = "timeout"
	AbortClientGone = "client_gone"
	AbortTooLarge   = "too_large"
)

// withDeadline gives every request its deadline.
func (s *Server) withDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// aborted answers a request that its deadline, its client going away, a
// search bound or the searches' shared memory (503 busy) stopped, and
// reports whether err was one of those.
func (s *Server) aborted(w http.ResponseWriter, r *http.Request, err error) bool {
	var reason, detail, code string
	var tooLarge *candidates.LimitError
	switch {
	case errors.Is(err, candidates.ErrBusy):
		// The searches' shared memory ran out (admission.go).
		s.refuseBusy(w, r, AdmitAnswer)
		return true
	case errors.As(err, &tooLarge):
		reason, code, detail = AbortTooLarge, CodeQueryTooLarge, tooLarge.Error()
	case errors.Is(err, context.DeadlineExceeded):
		reason, code = AbortTimeout, CodeRequestTimeout
		detail = fmt.Sprintf("The request did not complete within the server's time limit (%s) and was stopped.", s.cfg.RequestTimeout)
	case errors.Is(err, context.Canceled):
		// Nobody reads the answer; the log and the metrics do.
		reason, detail = AbortClientGone, "The client closed the connection."
	default:
		return false
	}
	info := infoOf(r)
	if s.cfg.Observer != nil {
		s.cfg.Observer.RequestAborted(info.route, reason)
	}
	s.cfg.Logger.Warn("request stopped", "reason", reason, "method", r.Method, "route", info.route,
		"query", queryShape(r), "request_id", info.id)
	writeError(w, r, http.StatusServiceUnavailable, detail, code)
	return true
}

// queryShape sums a query up for the log without its values: how often
// each parameter comes (request group suffixes folded into <S>), the value
// of the short request-wide ones, and its size.
func queryShape(r *http.Request) string {
	q := queryOf(r)
	counts := map[string]int{}
	var order []string
	for _, p := range q.pairs {
		key := p.Key
		if m := acGroupKey133.FindStringSubmatch(key); m != nil && m[2] != "" {
			key = m[1] + "<S>"
		}
		if counts[key] == 0 {
			order = append(order, key)
		}
		counts[key]++
	}
	var b strings.Builder
	for i, key := range order {
		if i == 20 {
			fmt.Fprintf(&b, "... ")
			break
		}
		switch key {
		case "limit", "group_policy":
			if v := q.values[key]; len(v[0]) <= 16 {
				fmt.Fprintf(&b, "%s=%s ", key, v[0])
				continue
			}
		}
		fmt.Fprintf(&b, "%s×%d ", key, counts[key])
	}
	b.WriteString("(" + strconv.Itoa(len(q.pairs)) + " parameters, " + strconv.Itoa(len(q.raw)) + " bytes)")
	return b.String()
}
