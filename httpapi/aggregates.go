package httpapi

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi/schema"
)

// Aggregate list schemas, upstream's schemas/aggregate.py.
var (
	putAggregatesSchema11 = schema.MustCompileBody(`{
		"type": "array",
		"items": {"type": "string", "format": "uuid"},
		"uniqueItems": true
	}`)
	putAggregatesSchema119 = schema.MustCompileBody(`{
		"type": "object",
		"properties": {
			"aggregates": {
				"type": "array",
				"items": {"type": "string", "format": "uuid"},
				"uniqueItems": true
			},
			"resource_provider_generation": {"type": "integer"}
		},
		"required": ["aggregates", "resource_provider_generation"],
		"additionalProperties": false
	}`)
)

// sendAggregates answers with the aggregate list, with the provider
// generation from 1.19. Associations carry no timestamps, so upstream
// reports now as Last-Modified.
func sendAggregates(w http.ResponseWriter, r *http.Request, aggs []string, generation int64) {
	body := map[string]any{"aggregates": aggs}
	if versionOf(r).AtLeast(19) {
		body["resource_provider_generation"] = generation
	}
	setLastModified(w, r, time.Now())
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) getAggregates(w http.ResponseWriter, r *http.Request) {
	uuid := mux.Vars(r)["uuid"]
	var found bool
	var generation int64
	aggs := []string{}
	if !s.read(w, r, func(st *state.Store) {
		if p := st.Providers.Get(uuid); p != nil {
			found, generation = true, p.Generation
			aggs = append(aggs, state.SortedKeys(p.Aggregates)...)
		}
	}) {
		return
	}
	if !found {
		writeStateError(w, r, state.ProviderNotFound(uuid))
		return
	}
	sendAggregates(w, r, aggs, generation)
}

func (s *Server) setAggregates(w http.ResponseWriter, r *http.Request) {
	uuid := mux.Vars(r)["uuid"]
	// Upstream looks the provider up before reading the body.
	if _, found, ok := s.readProvider(w, r, uuid); !ok {
		return
	} else if !found {
		writeStateError(w, r, state.ProviderNotFound(uuid))
		return
	}
	cmd := &state.SetAggregates{UUID: uuid}
	if versionOf(r).AtLeast(19) {
		var body struct {
			Aggregates []string `json:"aggregates"`
			Generation int64    `json:"resource_provider_generation"`
		}
		if !s.decodeRouteBody(w, r, &body) {
			return
		}
		cmd.Aggregates, cmd.Generation = body.Aggregates, &body.Generation
	} else if !s.decodeRouteBody(w, r, &cmd.Aggregates) {
		return
	}
	if cmd.Aggregates == nil {
		cmd.Aggregates = []string{}
	}
	v, ok := s.apply(w, r, cmd)
	if !ok {
		return
	}
	res := v.(state.AggregatesResult)
	sendAggregates(w, r, res.Aggregates, res.Generation)
}
