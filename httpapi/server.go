package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/placementd/placementd/fsm/state"
)

// Backend is what the API needs from the cluster: proposing commands and
// linearizable reads of the state.
type Backend interface {
	Apply(ctx context.Context, cmd state.Command) (any, error)
	Read(ctx context.Context, fn func(s *state.Store)) error
}

// Config holds the API's settings (flags of `placementd serve`).
type Config struct {
	// IncompleteConsumerProjectID and ...UserID are given to consumers
	// written before microversion 1.8, which carry no project or user.
	IncompleteConsumerProjectID string
	IncompleteConsumerUserID    string
	CORSAllowedOrigins          []string
	CORSAllowHeaders            []string
	// MaxBodyBytes bounds request bodies (default 16 MiB).
	MaxBodyBytes int64
	Logger       *slog.Logger
	// Authorizer decides policy; nil allows everything the caller is
	// authenticated for.
	Authorizer Authorizer
}

// Authorizer checks a policy rule for a request's credentials.
type Authorizer interface {
	Authorize(rule string, creds Credentials, target map[string]string) error
}

// Server serves the Placement API.
type Server struct {
	cfg     Config
	backend Backend
	handler http.Handler
}

// New builds the API over backend.
func New(backend Backend, cfg Config) *Server {
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 16 << 20
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
	s := &Server{cfg: cfg, backend: backend}
	router := mux.NewRouter()
	router.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, http.StatusNotFound, "", "")
	})
	for _, rt := range s.routes() {
		router.Handle(rt.path, methodDispatch(rt.methods))
	}
	var h http.Handler = router
	h = s.checkContentHeaders(h)
	h = s.authenticate(h)
	h = negotiateVersion(h)
	h = s.cors(h)
	h = s.requestID(h)
	s.handler = h
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// route is one path with its handlers by method, declared in the order
// upstream declares them (the order the Allow header lists).
type route struct {
	path    string
	methods []methodHandler
}

type methodHandler struct {
	method  string
	handler http.HandlerFunc
}

func methodDispatch(methods []methodHandler) http.Handler {
	names := make([]string, len(methods))
	for i, m := range methods {
		names[i] = m.method
	}
	allow := strings.Join(names, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, m := range methods {
			if m.method == r.Method {
				m.handler(w, r)
				return
			}
		}
		w.Header().Set("Allow", allow)
		writeError(w, r, http.StatusMethodNotAllowed, "The method specified is not allowed for this resource.", "")
	})
}

// requestID gives every response an openstack-request-id.
func (s *Server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("openstack-request-id", "req-"+uuid.NewString())
		next.ServeHTTP(w, r)
	})
}

// checkContentHeaders rejects a body without a content type, as upstream's
// PlacementHandler does, and bounds body size.
func (s *Server) checkContentHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cl := r.Header.Get("Content-Length"); cl != "" {
			if r.ContentLength < 0 {
				writeError(w, r, http.StatusBadRequest, "content-length header must be an integer", "")
				return
			}
			if r.ContentLength > 0 && r.Header.Get("Content-Type") == "" {
				writeError(w, r, http.StatusBadRequest, "content-type header required when content-length > 0", "")
				return
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// cors is replaced by the CORS middleware when origins are configured.
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
