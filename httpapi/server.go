package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/placementd/placementd/cluster/backend"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi/httpguard"
)

// Backend is what the API needs from the cluster: proposing commands and
// linearizable reads of the state.
//
// Apply proposes cmd and returns its result: the command's value, its
// *state.Error rejection, or backend.ErrNotLeader (the command certainly
// did not reach the log: 503 with backend.NotAppliedHeader, which a
// forwarding node takes as safe to send on) or backend.ErrUnknownOutcome
// (it may still commit: 503).
//
// Read returns the version of the state to answer a read from, as fresh
// as opts say (backend.ReadOptions: the level, a bounded read's bound on
// staleness, and opts.Served, told the index of the state served). A
// request served through ServeHTTP reads with the zero options: a
// linearizable read after the node's read barrier. The cluster front
// serves the reads it answers on this node through ServeRead with the
// options it chose (a stale or bounded read, or a follower's read whose
// read index it has already waited for). The version returned never
// changes: handlers read it without copying.
type Backend interface {
	Apply(ctx context.Context, cmd state.Command) (any, error)
	Read(ctx context.Context, opts backend.ReadOptions) (*state.Store, error)
}

// DefaultMaxBodyBytes bounds a request body unless Config.MaxBodyBytes
// says otherwise (--max-request-body-mb).
const DefaultMaxBodyBytes = 16 << 20

// Config holds the API's settings (flags of `placementd serve`).
type Config struct {
	// IncompleteConsumerProjectID and ...UserID are given to consumers
	// written before microversion 1.8, which carry no project or user.
	IncompleteConsumerProjectID string
	IncompleteConsumerUserID    string
	// CORSAllowedOrigins enables CORS for these origins ("*": any); empty
	// disables CORS handling altogether.
	CORSAllowedOrigins []string
	// CORSAllowHeaders are the request headers a preflight may ask for
	// besides the simple ones (default: Placement's list).
	CORSAllowHeaders []string
	// MaxBodyBytes bounds request bodies (0: DefaultMaxBodyBytes): a
	// longer one is answered 413.
	MaxBodyBytes int64
	Logger       *slog.Logger
	// Authorizer decides policy; nil allows everything the caller is
	// authenticated for.
	Authorizer Authorizer
	// Keystone, when set, authenticates requests against Keystone
	// (--auth-strategy keystone) instead of noauth2.
	Keystone *KeystoneConfig

	// Upstream's [placement] options for GET /allocation_candidates:
	// RandomizeAllocationCandidates samples (or shuffles) the candidates
	// instead of returning the first ones; MaxAllocationCandidates bounds
	// how many are generated (0: DefaultMaxAllocationCandidates; -1, as
	// upstream's default, means no bound); AllocationCandidatesStrategy is
	// "depth-first" (default) or "breadth-first".
	RandomizeAllocationCandidates bool
	MaxAllocationCandidates       int
	AllocationCandidatesStrategy  string
	// CandidatesMaxBytes bounds the memory one allocation-candidates
	// answer may take (0: DefaultCandidatesMaxBytes; -1: no bound).
	CandidatesMaxBytes int64

	// RequestTimeout is every request's deadline (0:
	// DefaultRequestTimeout). See deadline.go.
	RequestTimeout time.Duration

	// MaxBodyDecodeBytes bounds the bytes of request bodies decoded at
	// once, MaxCandidateSearches the allocation-candidates searches run
	// at once (0: the defaults; -1: no bound); a request past them waits
	// at most AdmissionWait (0: DefaultAdmissionWait). See admission.go.
	MaxBodyDecodeBytes   int64
	MaxCandidateSearches int
	AdmissionWait        time.Duration
	// MaxAnswerBytes bounds the bytes of allocation-candidates answers
	// held while they are sent (0: DefaultMaxAnswerBytes; -1: no bound).
	MaxAnswerBytes int64

	// Observer, when set, is told about every request the API answers and
	// every allocation-candidates search (Prometheus metrics).
	Observer Observer
}

// Observer watches the API's work; cluster/metrics implements it. Its
// methods must not block.
type Observer interface {
	RequestStarted()
	// RequestDone: route is the matched route's path template ("" when
	// none matched).
	RequestDone(route, method string, status int, d time.Duration)
	// CandidatesSearched: an allocation-candidates search took d, did
	// steps of work (candidates.Result.Steps) and returned candidates.
	CandidatesSearched(d time.Duration, returned int, steps int64)
	// RequestAborted: a request was stopped by its deadline, its client
	// going away or a search bound (reason: the Abort constants).
	RequestAborted(route, reason string)
}

// Authorizer checks a policy rule for a request's credentials.
type Authorizer interface {
	Authorize(rule string, creds Credentials, target map[string]string) error
}

// Server serves the Placement API.
type Server struct {
	cfg     Config
	backend Backend
	// inner is the chain of middleware and routes under the request log
	// (serve).
	inner http.Handler
	// keystone validates tokens when cfg.Keystone is set.
	keystone *keystone
	// bodySlots, searchSlots and answerBytes admit body decodes,
	// candidate searches and their answers being sent (admission.go).
	bodySlots, searchSlots, answerBytes *httpguard.Admission
	// onAdmitted, set by tests only, runs once a request took a slot.
	onAdmitted func(kind string)
}

// New builds the API over backend.
func New(backend Backend, cfg Config) *Server {
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.IncompleteConsumerProjectID == "" {
		cfg.IncompleteConsumerProjectID = "00000000-0000-0000-0000-000000000000"
	}
	if cfg.IncompleteConsumerUserID == "" {
		cfg.IncompleteConsumerUserID = "00000000-0000-0000-0000-000000000000"
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.MaxAllocationCandidates == 0 {
		cfg.MaxAllocationCandidates = DefaultMaxAllocationCandidates
	}
	if cfg.CandidatesMaxBytes == 0 {
		cfg.CandidatesMaxBytes = DefaultCandidatesMaxBytes
	}
	if cfg.MaxBodyDecodeBytes == 0 {
		cfg.MaxBodyDecodeBytes = DefaultMaxBodyDecodeBytes
	}
	if cfg.MaxCandidateSearches == 0 {
		cfg.MaxCandidateSearches = DefaultMaxCandidateSearches
	}
	if cfg.AdmissionWait == 0 {
		cfg.AdmissionWait = DefaultAdmissionWait
	}
	if cfg.MaxAnswerBytes == 0 {
		cfg.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	s := &Server{cfg: cfg, backend: backend,
		bodySlots:   httpguard.NewAdmission(cfg.MaxBodyDecodeBytes, cfg.AdmissionWait),
		searchSlots: httpguard.NewAdmission(int64(cfg.MaxCandidateSearches), cfg.AdmissionWait),
		answerBytes: httpguard.NewAdmission(cfg.MaxAnswerBytes, cfg.AdmissionWait)}
	router := mux.NewRouter()
	// Routes matches paths as they are: no cleaning, no redirects.
	router.SkipClean(true)
	router.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeRaisedError(w, r, http.StatusNotFound, "", "")
	})
	for _, rt := range s.routes() {
		router.Handle(rt.path, s.methodDispatch(rt.methods))
	}
	router.Use(noteRoute)
	// The chain of upstream's deploy.py, outermost last: request log (and
	// request id), CORS, noauth2 and request context, fault wrapper,
	// microversion, then PlacementHandler's own checks and the routes.
	var h http.Handler = router
	h = s.checkContentHeaders(h)
	h = negotiateVersion(h)
	h = s.faultWrap(h)
	if cfg.Keystone != nil {
		s.keystone = newKeystone(*cfg.Keystone)
		h = s.keystoneAuth(h)
	} else {
		h = s.authenticate(h)
	}
	h = s.cors(h)
	h = s.withDeadline(h)
	s.inner = h // under requestLog: serve
	return s
}

// ServeHTTP serves a request whose reads are linearizable (the zero
// backend.ReadOptions).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.serve(s.inner, backend.ReadOptions{}, w, r)
}

// ServeRead serves a request whose reads go to Backend.Read with opts
// (the cluster front's ReadServer).
func (s *Server) ServeRead(w http.ResponseWriter, r *http.Request, opts backend.ReadOptions) {
	s.serve(s.inner, opts, w, r)
}

// reqInfo is what the outer middleware learns about a request and the
// inner layers fill in (like upstream's WSGI environ), so that an error
// written anywhere carries the request id and knows the microversion.
type reqInfo struct {
	id       string      // local request id, req-<uuid>
	globalID string      // a valid inbound X-Openstack-Request-Id
	version  *Version    // nil until the microversion is negotiated
	endpoint *endpoint   // the route table's line serving the request, once chosen
	creds    Credentials // the caller's, once authenticated
	// route is the matched route's path template; user and project are
	// the caller's (for the request log and metrics).
	route, user, project string
	// query is the query string, split once (see queryOf).
	query *parsedQuery
	// read is how the request's reads are served (ServeRead; the zero
	// value: linearizable).
	read backend.ReadOptions
}

// noteRoute records the matched route's template and the caller in the
// request's info, for requestLog (it runs inside the router, after
// authentication).
func noteRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
			if rt := mux.CurrentRoute(r); rt != nil {
				info.route, _ = rt.GetPathTemplate()
			}
			c := credentialsOf(r)
			info.user, info.project = c.UserID, c.ProjectID
		}
		next.ServeHTTP(w, r)
	})
}

type infoKey struct{}

func infoOf(r *http.Request) *reqInfo {
	if i, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

// requestIDHeader is oslo.middleware's response header for the local
// request id.
const requestIDHeader = "X-Openstack-Request-Id"

var globalIDRE = regexp.MustCompile(`^req-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$`)

// recorder notes what a handler answered, for the request log, the fault
// wrapper and CORS (which adds headers as the response goes out).
type recorder struct {
	http.ResponseWriter
	status int
	size   int64
	// beforeWrite runs once, just before the status line goes out.
	beforeWrite func(status int, h http.Header)
}

func (rw *recorder) WriteHeader(code int) {
	if rw.status == 0 && code >= 200 {
		rw.status = code
		if rw.beforeWrite != nil {
			rw.beforeWrite(code, rw.Header())
		}
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recorder) Write(b []byte) (int, error) {
	if rw.status == 0 {
		rw.WriteHeader(http.StatusOK)
	}
	n, err := rw.ResponseWriter.Write(b)
	rw.size += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// requestLog is upstream's RequestLog: it gives the request its id (in
// every response and error body), defaults Accept to JSON so that errors
// come out as JSON, and logs the request when it is answered.
func (s *Server) requestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(next, backend.ReadOptions{}, w, r)
	})
}

// serve is requestLog's work for a request whose reads are served with
// read.
func (s *Server) serve(next http.Handler, read backend.ReadOptions, w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if s.cfg.Observer != nil {
		s.cfg.Observer.RequestStarted()
	}
	info := &reqInfo{id: "req-" + uuid.NewString(), read: read}
	if g := r.Header.Get(requestIDHeader); globalIDRE.MatchString(g) {
		info.globalID = g
	}
	if a, _ := acceptHeader(r.Header); a == "" || a == "*/*" {
		r.Header.Set("Accept", "application/json")
	}
	rec := &recorder{ResponseWriter: w}
	rec.Header().Set(requestIDHeader, info.id)
	r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
	next.ServeHTTP(rec, r)
	if rec.status == 0 {
		rec.WriteHeader(http.StatusOK)
	}
	elapsed := time.Since(start)
	if s.cfg.Observer != nil {
		s.cfg.Observer.RequestDone(info.route, r.Method, rec.status, elapsed)
	}
	microversion := "-"
	if info.version != nil {
		microversion = info.version.String()
	}
	uri := r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		uri += "?" + r.URL.RawQuery
	}
	attrs := []any{"remote", r.RemoteAddr, "method", r.Method, "uri", uri, "route", info.route,
		"status", rec.status, "len", rec.size, "microversion", microversion, "request_id", info.id,
		"duration_ms", float64(elapsed.Microseconds()) / 1000, "user_id", info.user, "project_id", info.project}
	if info.globalID != "" {
		attrs = append(attrs, "global_request_id", info.globalID)
	}
	if rec.status == http.StatusUnauthorized {
		attrs = append(attrs, "unauthorized", unauthorizedWhy(r.Header))
	}
	s.cfg.Logger.Info("request", attrs...)
}

// faultWrap is upstream's FaultWrapper: a handler that panics gets a 500
// (without the microversion headers, which upstream adds only to
// responses that make it back through the microversion middleware).
func (s *Server) faultWrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		saved := w.Header().Clone()
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.cfg.Logger.Error("Placement API unexpected error", "error", p, "request_id", infoOf(r).id)
			if rec, ok := w.(*recorder); ok && rec.status != 0 {
				// Too late for an error response: drop the connection.
				panic(http.ErrAbortHandler)
			}
			h := w.Header()
			for k := range h {
				delete(h, k)
			}
			for k, v := range saved {
				h[k] = v
			}
			writeError(w, r, http.StatusInternalServerError, fmt.Sprint(p), "")
		}()
		next.ServeHTTP(w, r)
	})
}

// badContentLengthHeader carries a Content-Length that Go's HTTP server
// would have refused before the handlers saw it (see FixContentLength).
const badContentLengthHeader = "X-Placementd-Invalid-Content-Length"

// checkContentHeaders is PlacementHandler's check that a body comes with a
// content type; it also bounds body size.
func (s *Server) checkContentHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if clen, bad := r.Header[badContentLengthHeader]; bad {
			// The body that followed cannot be delimited: drop the
			// connection after answering.
			w.Header().Set("Connection", "close")
			// Upstream reads the (first) header with Python's int(): "-1"
			// or " +5 " pass, and only a length above 0 needs a type.
			n, ok := pyInt(clen[0])
			if !ok {
				writeRaisedError(w, r, http.StatusBadRequest, "content-length header must be an integer", "")
				return
			}
			if n != "0" && !strings.HasPrefix(n, "-") && r.Header.Get("Content-Type") == "" {
				writeRaisedError(w, r, http.StatusBadRequest, "content-type header required when content-length > 0", "")
				return
			}
			r.Body, r.ContentLength = http.NoBody, 0
		}
		if r.ContentLength > 0 && r.Header.Get("Content-Type") == "" {
			writeRaisedError(w, r, http.StatusBadRequest, "content-type header required when content-length > 0", "")
			return
		}
		if r.ContentLength > s.cfg.MaxBodyBytes {
			writeRaisedError(w, r, http.StatusRequestEntityTooLarge,
				fmt.Sprintf("Request body larger than %d bytes", s.cfg.MaxBodyBytes), "")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// cors is the CORS middleware when origins are configured.
func (s *Server) cors(next http.Handler) http.Handler {
	if len(s.cfg.CORSAllowedOrigins) == 0 {
		return next
	}
	return corsMiddleware(s.cfg.CORSAllowedOrigins, s.cfg.CORSAllowHeaders, next)
}

// normalizeUUID returns the canonical dashed lower-case form of a UUID
// given with or without dashes, or "" if s is not a UUID.
func normalizeUUID(s string) string {
	u, err := uuid.Parse(s)
	if err != nil || strings.HasPrefix(s, "urn:") || strings.HasPrefix(s, "{") {
		return ""
	}
	return u.String()
}

// newUUID generates an identifier on the proposing node (never in Apply).
func newUUID() string { return uuid.NewString() }
