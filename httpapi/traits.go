package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi/schema"
)

// Trait schemas, upstream's schemas/trait.py.
var (
	customTraitSchema = schema.MustCompile(`{
		"type": "string",
		"minLength": 1, "maxLength": 255,
		"pattern": "^CUSTOM_[A-Z0-9_]+$"
	}`)
	setProviderTraitsSchema = schema.MustCompileBody(`{
		"type": "object",
		"properties": {
			"traits": {
				"type": "array",
				"items": {"type": "string", "minLength": 1, "maxLength": 255}
			},
			"resource_provider_generation": {"type": "integer"}
		},
		"required": ["traits", "resource_provider_generation"],
		"additionalProperties": false
	}`)
	listTraitsSchema = schema.MustCompile(`{
		"type": "object",
		"properties": {
			"name": {"type": "string"},
			"associated": {"type": "string"}
		},
		"additionalProperties": false
	}`)
)

// traitURL is upstream's util.trait_url.
func traitURL(name string) string { return "/traits/" + name }

// traitsModified is upstream's _serialize_traits last-modified: the latest
// trait timestamp, now if any trait has none (standard traits here) or if
// there are no traits.
func traitsModified(traits []state.Trait) time.Time {
	var t time.Time
	for _, tr := range traits {
		m := latest(tr.Created, tr.Updated)
		if m.IsZero() {
			return time.Time{}
		}
		t = latest(t, m)
	}
	return t
}

func traitNames(traits []state.Trait) []string {
	out := make([]string, 0, len(traits))
	for _, t := range traits {
		out = append(out, t.Name)
	}
	return out
}

// lastQueryValue is webob's req.GET[key]: the last value given.
func lastQueryValue(r *http.Request, key string) (string, bool) {
	var v string
	found := false
	for _, p := range queryPairs(r) {
		if p.Key == key {
			v, found = p.Value, true
		}
	}
	return v, found
}

func (s *Server) listTraits(w http.ResponseWriter, r *http.Request) {
	if !validateRouteQuery(w, r) {
		return
	}
	var f state.TraitFilter
	if name, ok := lastQueryValue(r, "name"); ok {
		op, value, found := strings.Cut(name, ":")
		if !found {
			writeError(w, r, http.StatusBadRequest, fmt.Sprintf("Badly formatted name parameter. "+
				"Expected name query string parameter in form: "+
				"?name=[in|startswith]:[name1,name2|prefix]. Got: \"%s\"", name), "")
			return
		}
		// Any other operator filters nothing, as upstream.
		switch op {
		case "in":
			f.NameIn = strings.Split(value, ",")
		case "startswith":
			f.Prefix = &value
		}
	}
	if assoc, ok := lastQueryValue(r, "associated"); ok {
		switch strings.ToLower(assoc) {
		case "true", "false":
			b := strings.ToLower(assoc) == "true"
			f.Associated = &b
		default:
			writeError(w, r, http.StatusBadRequest,
				"The query parameter \"associated\" only accepts \"true\" or \"false\"", "")
			return
		}
	}
	var traits []state.Trait
	if !s.read(w, r, func(st *state.Store) {
		traits = st.ListTraits(f)
		// Upstream's query gives trait id order, but by name when it
		// filters on names (their index).
		if f.NameIn == nil {
			st.SortTraitsInIDOrder(traits)
		}
	}) {
		return
	}
	setLastModified(w, r, traitsModified(traits))
	writeJSON(w, http.StatusOK, map[string]any{"traits": traitNames(traits)})
}

func (s *Server) getTrait(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	st, ok := s.version(w, r)
	if !ok {
		return
	}
	trait := st.Traits.Get(name)
	if trait == nil {
		writeError(w, r, http.StatusNotFound, fmt.Sprintf("No such trait(s): %s.", name), "")
		return
	}
	setLastModified(w, r, trait.Created)
	writeNoContent(w)
}

func (s *Server) putTrait(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	if customTraitSchema.Validate(name) != nil {
		writeError(w, r, http.StatusBadRequest, "The trait is invalid. A valid trait must be no longer than "+
			"255 characters, start with the prefix \"CUSTOM_\" and use "+
			"following characters: \"A\"-\"Z\", \"0\"-\"9\" and \"_\"", "")
		return
	}
	v, ok := s.apply(w, r, &state.CreateTrait{Name: name})
	if !ok {
		return
	}
	res := v.(state.CreateTraitResult)
	w.Header().Set("Location", absoluteURL(r, traitURL(name)))
	setLastModified(w, r, res.Trait.Created)
	if res.Created {
		w.Header().Del("Content-Type")
		w.WriteHeader(http.StatusCreated)
		return
	}
	writeNoContent(w)
}

func (s *Server) deleteTrait(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.apply(w, r, &state.DeleteTrait{Name: mux.Vars(r)["name"]}); !ok {
		return
	}
	writeNoContent(w)
}

// providerTraitsJSON is upstream's provider traits body, in its key order.
type providerTraitsJSON struct {
	Traits     []string `json:"traits"`
	Generation int64    `json:"resource_provider_generation"`
}

func (s *Server) listProviderTraits(w http.ResponseWriter, r *http.Request) {
	uuid := mux.Vars(r)["uuid"]
	var found bool
	var res state.ProviderTraitsResult
	if !s.read(w, r, func(st *state.Store) {
		if p := st.Providers.Get(uuid); p != nil {
			found = true
			res = state.ProviderTraitsResult{Generation: p.Generation, Traits: st.ProviderTraits(p)}
			st.SortTraitsInIDOrder(res.Traits) // upstream's (provider, trait id) index
		}
	}) {
		return
	}
	if !found {
		writeError(w, r, http.StatusNotFound, fmt.Sprintf("No resource provider with uuid %s found: %s",
			uuid, state.ProviderNotFound(uuid).Detail), "")
		return
	}
	setLastModified(w, r, traitsModified(res.Traits))
	writeJSON(w, http.StatusOK, providerTraitsJSON{Traits: traitNames(res.Traits), Generation: res.Generation})
}

func (s *Server) updateProviderTraits(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Traits     []string        `json:"traits"`
		Generation json.RawMessage `json:"resource_provider_generation"`
	}
	if !s.decodeRouteBody(w, r, &body) {
		return
	}
	v, ok := s.apply(w, r, &state.SetProviderTraits{
		Provider: mux.Vars(r)["uuid"], Generation: jsonGeneration(body.Generation), Traits: body.Traits,
	})
	if !ok {
		return
	}
	res := v.(state.ProviderTraitsResult)
	setLastModified(w, r, traitsModified(res.Traits))
	writeJSON(w, http.StatusOK, providerTraitsJSON{Traits: traitNames(res.Traits), Generation: res.Generation})
}

func (s *Server) deleteProviderTraits(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.apply(w, r, &state.DeleteProviderTraits{Provider: mux.Vars(r)["uuid"]}); !ok {
		return
	}
	writeNoContent(w)
}
