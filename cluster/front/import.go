package front

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/backend"
	"github.com/placementd/placementd/fsm/state"
)

// The import endpoint of the operator API (`placementd import`, see
// docs/migration.md):
//
//	GET  /_cluster/import   what the state holds (state.Contents), to check
//	                        that a cluster is empty before importing into it
//	POST /_cluster/import   one state.ImportChunk, applied through Raft;
//	                        answers its state.ImportResult

// maxChunkBytes bounds an import chunk's body, as the API bounds its own.
const maxChunkBytes = 16 << 20

func (h *Handler) importEndpoint(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		st, err := h.node.Read(r.Context(), backend.ReadOptions{})
		if err != nil {
			writeUnavailable(w, "Cannot read the state: "+err.Error(), true)
			return
		}
		writeJSONBody(w, http.StatusOK, st.Contents())
		return
	}
	var chunk state.ImportChunk
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxChunkBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&chunk); err != nil {
		writeErrorBody(w, http.StatusBadRequest, "import: the body is not an import chunk: "+err.Error())
		return
	}
	v, err := h.node.Apply(r.Context(), &chunk)
	var se *state.Error
	switch {
	case err == nil:
		writeJSONBody(w, http.StatusOK, v)
	case errors.As(err, &se):
		status := map[state.Kind]int{state.BadRequest: http.StatusBadRequest, state.NotFound: http.StatusNotFound,
			state.Conflict: http.StatusConflict}[se.Kind]
		writeErrorBody(w, status, se.Detail)
	case errors.Is(err, cluster.ErrNotLeader):
		writeUnavailable(w, "Leadership changed; retry.", true)
	default:
		// ErrUnknownOutcome: the chunk may have been applied.
		writeUnavailable(w, "import: "+err.Error(), false)
	}
}

// ImportContents reports what the cluster's state holds.
func (c *Client) ImportContents(ctx context.Context) (state.Contents, error) {
	var out state.Contents
	err := c.do(ctx, http.MethodGet, "/_cluster/import", nil, &out)
	return out, err
}

// Import applies one import chunk.
func (c *Client) Import(ctx context.Context, chunk *state.ImportChunk) (state.ImportResult, error) {
	var out state.ImportResult
	err := c.do(ctx, http.MethodPost, "/_cluster/import", chunk, &out)
	return out, err
}
