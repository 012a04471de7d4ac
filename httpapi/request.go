package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi/schema"
)

// writeJSON answers with a JSON body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeNoContent answers 204.
func writeNoContent(w http.ResponseWriter) {
	w.Header().Del("Content-Type")
	w.WriteHeader(http.StatusNoContent)
}

// httpTime is the Last-Modified format.
func httpTime(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// setLastModified sets Last-Modified and Cache-Control from 1.15 on. A zero
// t (standard classes and traits, which have no timestamps) means now, as
// upstream does.
func setLastModified(w http.ResponseWriter, r *http.Request, t time.Time) {
	if !versionOf(r).AtLeast(15) {
		return
	}
	if t.IsZero() {
		t = time.Now()
	}
	w.Header().Set("Last-Modified", httpTime(t))
	w.Header().Set("Cache-Control", "no-cache")
}

// latest returns the later of two times.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// read runs fn over the state after the read barrier. On failure it has
// answered the request and returns false.
func (s *Server) read(w http.ResponseWriter, r *http.Request, fn func(st *state.Store)) bool {
	if err := s.backend.Read(r.Context(), fn); err != nil {
		writeStateError(w, r, err)
		return false
	}
	return true
}

// apply proposes cmd through Raft. On failure (a rejection by the state or
// a cluster error) it has answered the request and returns false.
func (s *Server) apply(w http.ResponseWriter, r *http.Request, cmd state.Command) (any, bool) {
	v, err := s.backend.Apply(r.Context(), cmd)
	if err != nil {
		writeStateError(w, r, err)
		return nil, false
	}
	return v, true
}

// requireJSON answers 415 unless the request body is declared JSON, as
// upstream's require_content('application/json').
func requireJSON(w http.ResponseWriter, r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != "application/json" {
		shown := mt
		if err != nil || ct == "" {
			shown = ct
		}
		writeError(w, r, http.StatusUnsupportedMediaType,
			"The media type "+shown+" is not supported, use application/json", "")
		return false
	}
	return true
}

// decodeBody reads a JSON body, validates it against sch and decodes it
// into dst. On failure it has answered 400 (or 413/415) and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, sch *schema.Schema, dst any) bool {
	if !requireJSON(w, r) {
		return false
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, r, http.StatusRequestEntityTooLarge, "Request body too large", "")
			return false
		}
		writeError(w, r, http.StatusBadRequest, "Malformed JSON: "+err.Error(), "")
		return false
	}
	doc, err := schema.DecodeJSON(body)
	if err != nil {
		writeError(w, r, http.StatusBadRequest, "Malformed JSON: "+err.Error(), "")
		return false
	}
	if sch != nil {
		if err := sch.Validate(doc); err != nil {
			writeError(w, r, http.StatusBadRequest, "JSON does not validate: "+err.Error(), "")
			return false
		}
	}
	if dst != nil {
		if err := json.Unmarshal(body, dst); err != nil {
			writeError(w, r, http.StatusBadRequest, "Malformed JSON: "+err.Error(), "")
			return false
		}
	}
	return true
}

var zeroTime time.Time
