package httpapi

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi/schema"
)

// postResourceClassSchema is upstream's POST_RC_SCHEMA_V1_2 (PUT before
// 1.7 uses the same); the pattern is CUSTOM_RC_PATTERN, which error
// messages quote.
var postResourceClassSchema = schema.MustCompileBody(`{
	"type": "object",
	"properties": {
		"name": {"type": "string", "pattern": "^CUSTOM_[A-Z0-9_]+$", "maxLength": 255}
	},
	"required": ["name"],
	"additionalProperties": false
}`)

// resourceClassJSON is upstream's _serialize_resource_class, keys in its
// order.
type resourceClassJSON struct {
	Name  string     `json:"name"`
	Links []linkJSON `json:"links"`
}

func serializeResourceClass(name string) resourceClassJSON {
	return resourceClassJSON{Name: name, Links: []linkJSON{{Rel: "self", Href: "/resource_classes/" + name}}}
}

func (s *Server) listResourceClasses(w http.ResponseWriter, r *http.Request) {
	var out []any
	var modified = zeroTime
	if !s.read(w, r, func(st *state.Store) {
		for _, rc := range st.ClassesByID() {
			out = append(out, serializeResourceClass(rc.Name))
			modified = latest(modified, latest(rc.Created, rc.Updated))
		}
	}) {
		return
	}
	setLastModified(w, r, modified)
	writeJSON(w, http.StatusOK, map[string]any{"resource_classes": out})
}

func (s *Server) getResourceClass(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	st, ok := s.version(w, r)
	if !ok {
		return
	}
	rc := st.Classes.Get(name)
	if rc == nil {
		writeStateError(w, r, state.ClassNotFound(name))
		return
	}
	setLastModified(w, r, latest(rc.Created, rc.Updated))
	writeJSON(w, http.StatusOK, serializeResourceClass(rc.Name))
}

func (s *Server) createResourceClass(w http.ResponseWriter, r *http.Request) {
	var body struct{ Name string }
	if !s.decodeRouteBody(w, r, &body) {
		return
	}
	if _, ok := s.apply(w, r, &state.CreateResourceClass{Name: body.Name, MaxPlusOne: true}); !ok {
		return
	}
	w.Header().Set("Location", absoluteURL(r, "/resource_classes/"+body.Name))
	w.WriteHeader(http.StatusCreated)
}

// renameResourceClass is PUT before 1.7: it renames a custom class.
func (s *Server) renameResourceClass(w http.ResponseWriter, r *http.Request) {
	var body struct{ Name string }
	if !s.decodeRouteBody(w, r, &body) {
		return
	}
	v, ok := s.apply(w, r, &state.RenameResourceClass{Name: mux.Vars(r)["name"], NewName: body.Name})
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, serializeResourceClass(v.(state.ResourceClass).Name))
}

// putResourceClass is PUT from 1.7: a bodiless PUT creates the class if
// it is missing.
func (s *Server) putResourceClass(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	if err := postResourceClassSchema.Validate(map[string]any{"name": name}); err != nil {
		writeError(w, r, http.StatusBadRequest, "JSON does not validate: "+err.Error(), "")
		return
	}
	v, ok := s.apply(w, r, &state.CreateResourceClass{Name: name, IfMissing: true, MaxPlusOne: true})
	if !ok {
		return
	}
	w.Header().Set("Location", absoluteURL(r, "/resource_classes/"+name))
	if v.(state.CreateClassResult).Created {
		w.WriteHeader(http.StatusCreated)
		return
	}
	writeNoContent(w)
}

func (s *Server) deleteResourceClass(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.apply(w, r, &state.DeleteResourceClass{Name: mux.Vars(r)["name"]}); !ok {
		return
	}
	writeNoContent(w)
}
