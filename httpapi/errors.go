package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/fsm/state"
)

// explanations are webob's fixed first paragraph of each error body, which
// upstream Placement's detail text starts with.
var explanations = map[int]string{
	400: "The server could not comply with the request since it is either malformed or otherwise incorrect.",
	401: "This server could not verify that you are authorized to access the document you requested. Either you supplied the wrong credentials (e.g., bad password), or your browser does not understand how to supply the credentials required.",
	403: "Access was denied to this resource.",
	404: "The resource could not be found.",
	405: "The method specified is not allowed for this resource.",
	406: "The resource could not be generated that was acceptable to your browser.",
	409: "There was a conflict when trying to complete your request.",
	413: "The request is larger than the server is willing or able to process.",
	415: "The request media type is not supported by this server.",
	500: "The server has either erred or is incapable of performing the requested operation.",
	503: "The server is currently unavailable. Please try again at a later time.",
}

type errorBody struct {
	Errors []errorItem `json:"errors"`
}

type errorItem struct {
	Status    int    `json:"status"`
	Title     string `json:"title"`
	Detail    string `json:"detail"`
	Code      string `json:"code,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// writeError answers in Placement's error format. code is the Placement
// error code (shown from 1.23; default placement.undefined_code).
func writeError(w http.ResponseWriter, r *http.Request, status int, detail, code string) {
	writeErrorVersion(w, r, status, detail, code, versionOf(r))
}

func writeErrorVersion(w http.ResponseWriter, r *http.Request, status int, detail, code string, v Version) {
	item := errorItem{
		Status: status,
		Title:  http.StatusText(status),
		// webob's body: explanation, blank line, detail, with its spacing.
		Detail: explanations[status] + "\n\n " + detail + "  ",
	}
	if v.AtLeast(23) {
		if code == "" {
			code = state.CodeDefault
		}
		item.Code = code
		item.RequestID = w.Header().Get("openstack-request-id")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Del("Last-Modified")
	h.Del("Cache-Control")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(errorBody{Errors: []errorItem{item}})
}

// writeStateError maps an error from the cluster or the state to a
// response: a *state.Error by its kind, a write of unknown outcome or a
// missing leader as 503 with Retry-After.
func writeStateError(w http.ResponseWriter, r *http.Request, err error) {
	var se *state.Error
	switch {
	case errors.As(err, &se):
		status := http.StatusBadRequest
		switch se.Kind {
		case state.NotFound:
			status = http.StatusNotFound
		case state.Conflict:
			status = http.StatusConflict
		}
		writeError(w, r, status, se.Detail, se.Code)
	case errors.Is(err, cluster.ErrUnknownOutcome), errors.Is(err, cluster.ErrNotLeader):
		w.Header().Set("Retry-After", "1")
		writeError(w, r, http.StatusServiceUnavailable, err.Error(), "")
	default:
		writeError(w, r, http.StatusInternalServerError, err.Error(), "")
	}
}
