package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi/schema"
)

// Request body schemas, upstream's schemas/resource_provider.py.
var (
	postProviderSchema = schema.MustCompileBody(`{
		"type": "object",
		"properties": {
			"name": {"type": "string", "maxLength": 200},
			"uuid": {"type": "string", "format": "uuid"}
		},
		"required": ["name"],
		"additionalProperties": false
	}`)
	putProviderSchema = schema.MustCompileBody(`{
		"type": "object",
		"properties": {
			"name": {"type": "string", "maxLength": 200}
		},
		"required": ["name"],
		"additionalProperties": false
	}`)
	postProviderSchema114 = schema.MustCompileBody(`{
		"type": "object",
		"properties": {
			"name": {"type": "string", "maxLength": 200},
			"uuid": {"type": "string", "format": "uuid"},
			"parent_provider_uuid": {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]}
		},
		"required": ["name"],
		"additionalProperties": false
	}`)
	putProviderSchema114 = schema.MustCompileBody(`{
		"type": "object",
		"properties": {
			"name": {"type": "string", "maxLength": 200},
			"parent_provider_uuid": {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]}
		},
		"required": ["name"],
		"additionalProperties": false
	}`)
)

// providerURL is upstream's util.resource_provider_url.
func providerURL(uuid string) string { return "/resource_providers/" + uuid }

type linkJSON struct {
	Rel  string `json:"rel"`
	Href string `json:"href"`
}

// providerLinks lists the provider's links for the request's version.
func providerLinks(r *http.Request, uuid string) []linkJSON {
	v := versionOf(r)
	url := providerURL(uuid)
	links := []linkJSON{{"self", url}}
	rels := []string{"inventories", "usages"}
	if v.AtLeast(1) {
		rels = append(rels, "aggregates")
	}
	if v.AtLeast(6) {
		rels = append(rels, "traits")
	}
	if v.AtLeast(11) {
		rels = append(rels, "allocations")
	}
	for _, rel := range rels {
		links = append(links, linkJSON{rel, url + "/" + rel})
	}
	return links
}

// providerJSON is the provider representation: parent and root from 1.14.
type providerJSON struct {
	UUID       string     `json:"uuid"`
	Name       string     `json:"name"`
	Generation int64      `json:"generation"`
	Links      []linkJSON `json:"links"`
	Parent     *nullable  `json:"parent_provider_uuid,omitempty"`
	Root       *nullable  `json:"root_provider_uuid,omitempty"`
}

// nullable is a string shown as null when empty.
type nullable string

func (n nullable) MarshalJSON() ([]byte, error) {
	if n == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(n))
}

func serializeProvider(r *http.Request, p state.ProviderSummary) providerJSON {
	out := providerJSON{UUID: p.UUID, Name: p.Name, Generation: p.Generation, Links: providerLinks(r, p.UUID)}
	if versionOf(r).AtLeast(14) {
		parent, root := nullable(p.ParentUUID), nullable(p.RootUUID)
		out.Parent, out.Root = &parent, &root
	}
	return out
}

// canonicalUUID is str(uuid.UUID(s)) for a string is_uuid_like accepts.
func canonicalUUID(s string) string {
	h := schema.UUIDLikeHex(s)
	if h == "" {
		return s
	}
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (s *Server) createResourceProvider(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name       string  `json:"name"`
		UUID       string  `json:"uuid"`
		ParentUUID *string `json:"parent_provider_uuid"`
	}
	if !s.decodeRouteBody(w, r, &body) {
		return
	}
	cmd := &state.CreateProvider{Name: body.Name}
	if body.UUID != "" {
		cmd.UUID = canonicalUUID(body.UUID)
	} else {
		cmd.UUID = newUUID()
	}
	if body.ParentUUID != nil {
		cmd.ParentUUID = *body.ParentUUID
	}
	if body.Name == "" {
		// Upstream's ResourceProvider.create refuses an empty name.
		writeError(w, r, http.StatusBadRequest, "Unable to create resource provider \"\", "+cmd.UUID+
			": Object action create failed because: name is required", "")
		return
	}
	v, ok := s.apply(w, r, cmd)
	if !ok {
		return
	}
	p := v.(state.ProviderSummary)
	w.Header().Set("Location", providerURL(p.UUID))
	if !versionOf(r).AtLeast(20) {
		w.WriteHeader(http.StatusCreated)
		return
	}
	setLastModified(w, r, p.LastModified())
	writeJSON(w, http.StatusOK, serializeProvider(r, p))
}

// readProvider copies one provider's summary out of the state; found is
// false (and nothing answered) when there is no such provider.
func (s *Server) readProvider(w http.ResponseWriter, r *http.Request, uuid string) (p state.ProviderSummary, found, ok bool) {
	ok = s.read(w, r, func(st *state.Store) {
		if rp := st.Providers.Get(uuid); rp != nil {
			p, found = rp.Summary(), true
		}
	})
	return p, found, ok
}

func (s *Server) getResourceProvider(w http.ResponseWriter, r *http.Request) {
	uuid := mux.Vars(r)["uuid"]
	p, found, ok := s.readProvider(w, r, uuid)
	if !ok {
		return
	}
	if !found {
		writeStateError(w, r, state.ProviderNotFound(uuid))
		return
	}
	setLastModified(w, r, p.LastModified())
	writeJSON(w, http.StatusOK, serializeProvider(r, p))
}

func (s *Server) updateResourceProvider(w http.ResponseWriter, r *http.Request) {
	uuid := mux.Vars(r)["uuid"]
	// Upstream looks the provider up before reading the body.
	before, found, ok := s.readProvider(w, r, uuid)
	if !ok {
		return
	} else if !found {
		writeStateError(w, r, state.ProviderNotFound(uuid))
		return
	}
	var body map[string]json.RawMessage
	if !s.decodeRouteBody(w, r, &body) {
		return
	}
	cmd := &state.UpdateProvider{UUID: uuid, AllowReparenting: versionOf(r).AtLeast(37)}
	json.Unmarshal(body["name"], &cmd.Name)
	if raw, has := body["parent_provider_uuid"]; has {
		var parent *string
		json.Unmarshal(raw, &parent)
		empty := ""
		if parent == nil {
			parent = &empty
		}
		cmd.ParentUUID = parent
	}
	v, ok := s.apply(w, r, cmd)
	if !ok {
		return
	}
	// Upstream's Last-Modified here is the updated_at of the provider it
	// loaded before saving, the time of its last change: none (then only
	// Cache-Control) for a provider created under a parent and not changed
	// since. (A root gets updated_at when it is created: upstream sets its
	// root id with an UPDATE.)
	if versionOf(r).AtLeast(15) {
		if before.ParentUUID == "" || before.Updated.After(before.Created) {
			setLastModified(w, r, before.Updated)
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
	}
	writeJSON(w, http.StatusOK, serializeProvider(r, v.(state.ProviderSummary)))
}

func (s *Server) deleteResourceProvider(w http.ResponseWriter, r *http.Request) {
	uuid := mux.Vars(r)["uuid"]
	if _, ok := s.apply(w, r, &state.DeleteProvider{UUID: uuid}); !ok {
		return
	}
	writeNoContent(w)
}

// listProvidersSchema builds upstream's GET_RPS_SCHEMA_1_x for a version:
// each version adds query parameters to the previous one's properties.
func listProvidersSchema(extra string) *schema.Schema {
	return schema.MustCompile(`{
		"type": "object",
		"properties": {
			"name": {"type": "string"},
			"uuid": {"type": "string", "format": "uuid"}` + extra + `
		},
		"additionalProperties": false
	}`)
}

var (
	listProvidersSchema10  = listProvidersSchema(``)
	listProvidersSchema13  = listProvidersSchema(`, "member_of": {"type": "string"}`)
	listProvidersSchema14  = listProvidersSchema(`, "member_of": {"type": "string"}, "resources": {"type": "string"}`)
	listProvidersSchema114 = listProvidersSchema(`, "member_of": {"type": "string"}, "resources": {"type": "string"},
		"in_tree": {"type": "string", "format": "uuid"}`)
	listProvidersSchema118 = listProvidersSchema(`, "member_of": {"type": "string"}, "resources": {"type": "string"},
		"in_tree": {"type": "string", "format": "uuid"}, "required": {"type": "string"}`)
)

func (s *Server) listResourceProviders(w http.ResponseWriter, r *http.Request) {
	if !validateRouteQuery(w, r) {
		return
	}
	var f state.ProviderFilter
	var detail string
	if queryHas(r, "member_of") {
		if f.MemberOf, f.ForbiddenAggregates, detail = normalizeMemberOf(r, ""); detail != "" {
			writeError(w, r, http.StatusBadRequest, detail, "")
			return
		}
	}
	if queryHas(r, "required") {
		if f.RequiredTraits, f.ForbiddenTraits, detail = normalizeRequiredTraits(r, ""); detail != "" {
			writeError(w, r, http.StatusBadRequest, detail, "")
			return
		}
	}
	f.UUID, f.Name, f.InTree = queryLast(r, "uuid"), queryLast(r, "name"), queryLast(r, "in_tree")
	if queryHas(r, "resources") {
		if f.Resources, detail = normalizeResources(queryLast(r, "resources")); detail != "" {
			writeError(w, r, http.StatusBadRequest, detail, "")
			return
		}
	}
	var found []state.ProviderSummary
	var ferr error
	if !s.read(w, r, func(st *state.Store) { found, ferr = st.FindProviders(f) }) {
		return
	}
	if ferr != nil {
		prefix := "Invalid resource class in resources parameter: "
		if strings.HasPrefix(ferr.Error(), "No such trait") {
			prefix = "Invalid trait(s) in \"required\" parameter: "
		}
		writeError(w, r, http.StatusBadRequest, prefix+ferr.Error(), "")
		return
	}
	out := make([]providerJSON, 0, len(found))
	var modified time.Time
	for _, p := range found {
		out = append(out, serializeProvider(r, p))
		modified = latest(modified, p.LastModified())
	}
	setLastModified(w, r, modified)
	writeJSON(w, http.StatusOK, map[string]any{"resource_providers": out})
}
