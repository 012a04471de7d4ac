package httpapi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gorilla/mux"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi/schema"
)

// Allocation schemas, upstream's schemas/allocation.py, built from the
// same pieces in the same key order.
const (
	uuidKeyPattern      = `^[0-9a-fA-F-]{36}$`
	resourcesSchemaJSON = `{
		"type": "object",
		"minProperties": 1,
		"patternProperties": {"^[A-Z0-9_]+$": {"type": "integer", "minimum": 1}},
		"additionalProperties": false
	}`
	consumerGenerationJSON = `"consumer_generation": {"type": ["integer", "null"], "additionalProperties": false}`
	mappingsJSON           = `"mappings": {
		"type": "object",
		"minProperties": 1,
		"patternProperties": {
			"[a-zA-Z0-9_-]{1,64}": {"type": "array", "minItems": 1, "items": {"type": "string", "format": "uuid"}}
		}
	}`
	consumerTypeJSON = `"consumer_type": {"type": "string", "pattern": "^[A-Z0-9_]+$", "minLength": 1, "maxLength": 255}`
	projectUserJSON  = `"project_id": {"type": "string", "minLength": 1, "maxLength": 255},
		"user_id": {"type": "string", "minLength": 1, "maxLength": 255}`
)

// allocationListSchemaJSON is ALLOCATION_SCHEMA (before 1.8) and, with
// project and user, ALLOCATION_SCHEMA_V1_8.
func allocationListSchemaJSON(projectUser bool) string {
	props, required := "", ""
	if projectUser {
		props, required = ", "+projectUserJSON, `, "project_id", "user_id"`
	}
	return `{
		"type": "object",
		"properties": {
			"allocations": {
				"type": "array",
				"minItems": 1,
				"items": {
					"type": "object",
					"properties": {
						"resource_provider": {
							"type": "object",
							"properties": {"uuid": {"type": "string", "format": "uuid"}},
							"additionalProperties": false,
							"required": ["uuid"]
						},
						"resources": ` + resourcesSchemaJSON + `
					},
					"required": ["resource_provider", "resources"],
					"additionalProperties": false
				}
			}` + props + `
		},
		"required": ["allocations"` + required + `],
		"additionalProperties": false
	}`
}

// consumerAllocationsSchemaJSON is one consumer's dict-format allocations:
// ALLOCATION_SCHEMA_V1_12 (minProperties 1), DELETABLE_ALLOCATIONS
// (minProperties 0), and the later versions with their extra properties
// appended as upstream's deep copies append them.
func consumerAllocationsSchemaJSON(minProperties int, generation, mappings, consumerType bool) string {
	props, required := "", ""
	if generation {
		props += ", " + consumerGenerationJSON
		required += `, "consumer_generation"`
	}
	if mappings {
		props += ", " + mappingsJSON
	}
	if consumerType {
		props += ", " + consumerTypeJSON
		required += `, "consumer_type"`
	}
	return fmt.Sprintf(`{
		"type": "object",
		"properties": {
			"allocations": {
				"type": "object",
				"minProperties": %d,
				"patternProperties": {
					%q: {
						"type": "object",
						"properties": {
							"generation": {"type": "integer"},
							"resources": %s
						},
						"required": ["resources"],
						"additionalProperties": false
					}
				},
				"additionalProperties": false
			},
			%s%s
		},
		"additionalProperties": false,
		"required": ["allocations", "project_id", "user_id"%s]
	}`, minProperties, uuidKeyPattern, resourcesSchemaJSON, projectUserJSON, props, required)
}

// consumersSchemaJSON is POST /allocations' body: consumers by uuid.
func consumersSchemaJSON(minProperties int, consumer string) string {
	return fmt.Sprintf(`{
		"type": "object",
		"minProperties": %d,
		"additionalProperties": false,
		"patternProperties": {%q: %s}
	}`, minProperties, uuidKeyPattern, consumer)
}

var (
	putAllocationsSchema   = schema.MustCompileBody(allocationListSchemaJSON(false))
	putAllocationsSchema8  = schema.MustCompileBody(allocationListSchemaJSON(true))
	putAllocationsSchema12 = schema.MustCompileBody(consumerAllocationsSchemaJSON(1, false, false, false))
	putAllocationsSchema28 = schema.MustCompileBody(consumerAllocationsSchemaJSON(0, true, false, false))
	putAllocationsSchema34 = schema.MustCompileBody(consumerAllocationsSchemaJSON(0, true, true, false))
	putAllocationsSchema38 = schema.MustCompileBody(consumerAllocationsSchemaJSON(0, true, true, true))

	postAllocationsSchema13 = schema.MustCompileBody(consumersSchemaJSON(1, consumerAllocationsSchemaJSON(0, false, false, false)))
	postAllocationsSchema28 = schema.MustCompileBody(consumersSchemaJSON(1, consumerAllocationsSchemaJSON(0, true, false, false)))
	postAllocationsSchema34 = schema.MustCompileBody(consumersSchemaJSON(1, consumerAllocationsSchemaJSON(0, true, true, false)))
	postAllocationsSchema38 = schema.MustCompileBody(consumersSchemaJSON(1, consumerAllocationsSchemaJSON(0, true, true, true)))
)

// allocationAmount reads a validated allocation amount (a number's
// literal). One too big for an int64 cannot fit any inventory (max_unit is
// at most 2^31-1): it becomes a value that fails the max_unit check
// without overflowing sums.
func allocationAmount(lit string) int64 {
	if n, ok := literalInt(lit); ok && n <= 1<<40 {
		return n
	}
	return 1 << 40
}

// resourcesOf appends one provider's validated "resources" object as
// requests, in document order.
func resourcesOf(out []state.AllocationRequest, provider string, res schema.Doc) []state.AllocationRequest {
	for _, class := range res.Keys() {
		lit, _ := res.Get(class).Number()
		out = append(out, state.AllocationRequest{Provider: provider, Class: class, Used: allocationAmount(lit)})
	}
	return out
}

// allocationsDict reads the dict format (1.12+): providers by uuid, in
// document order. Providers are looked up as spelt, as upstream's
// get_by_uuid.
func allocationsDict(allocs schema.Doc) []state.AllocationRequest {
	var out []state.AllocationRequest
	for _, rp := range allocs.Keys() {
		out = resourcesOf(out, rp, allocs.Get(rp).Get("resources"))
	}
	return out
}

// allocationsList reads the list format (before 1.12). As upstream turns
// the list into a dict by provider, a provider listed twice keeps its
// first position and its last resources.
func allocationsList(items schema.Doc) []state.AllocationRequest {
	var order []string
	last := map[string]schema.Doc{}
	for i := 0; i < items.Len(); i++ {
		it := items.Index(i)
		rp, _ := it.Get("resource_provider").Get("uuid").Text()
		if _, seen := last[rp]; !seen {
			order = append(order, rp)
		}
		last[rp] = it.Get("resources")
	}
	var out []state.AllocationRequest
	for _, rp := range order {
		out = resourcesOf(out, rp, last[rp])
	}
	return out
}

// consumerAllocations builds the state's request for one consumer from its
// validated body (the schemas type every field read here) at the
// request's microversion. Before 1.8 the consumer gets the configured
// incomplete project and user; from 1.28 its generation is checked; from
// 1.38 it carries a type.
func (s *Server) consumerAllocations(r *http.Request, consumer string, body schema.Doc, list bool) state.ConsumerAllocations {
	v := versionOf(r)
	ca := state.ConsumerAllocations{
		Consumer:  consumer,
		ProjectID: s.cfg.IncompleteConsumerProjectID,
		UserID:    s.cfg.IncompleteConsumerUserID,
	}
	if project, ok := body.Get("project_id").Text(); ok {
		ca.ProjectID = project
		if user, ok := body.Get("user_id").Text(); ok {
			ca.UserID = user
		}
	}
	if v.AtLeast(28) {
		ca.CheckGeneration = true
		if lit, ok := body.Get("consumer_generation").Number(); ok {
			n := jsonGeneration(json.RawMessage(lit))
			ca.Generation = &n
		}
	}
	if v.AtLeast(38) {
		ca.ConsumerType, _ = body.Get("consumer_type").Text()
	}
	if list {
		ca.Allocations = allocationsList(body.Get("allocations"))
	} else {
		ca.Allocations = allocationsDict(body.Get("allocations"))
	}
	return ca
}

// consumersOf reads POST /allocations' (and the reshaper's) validated
// consumers, in document order, each named as spelt (upstream does not
// canonicalise these).
func (s *Server) consumersOf(r *http.Request, bodies schema.Doc) []state.ConsumerAllocations {
	out := []state.ConsumerAllocations{}
	for _, key := range bodies.Keys() {
		out = append(out, s.consumerAllocations(r, key, bodies.Get(key), false))
	}
	return out
}

// isUUIDLike is oslo's uuidutils.is_uuid_like.
func isUUIDLike(s string) bool { return schema.UUIDLikeHex(s) != "" }

// pathConsumer is the consumer named by the path, as given: upstream
// canonicalises it only to write allocations (PUT), so GET and DELETE
// with another spelling of a uuid find nothing.
func pathConsumer(r *http.Request) string { return mux.Vars(r)["consumer_uuid"] }

func (s *Server) setConsumerAllocations(w http.ResponseWriter, r *http.Request) {
	raw := mux.Vars(r)["consumer_uuid"]
	if !isUUIDLike(raw) {
		writeError(w, r, http.StatusBadRequest, "Malformed consumer_uuid: "+raw, "")
		return
	}
	consumer := canonicalUUID(raw)
	var body schema.Doc
	if !s.decodeRouteBody(w, r, &body) {
		return
	}
	ca := s.consumerAllocations(r, consumer, body, !versionOf(r).AtLeast(12))
	if _, ok := s.apply(w, r, &state.SetAllocations{Consumers: []state.ConsumerAllocations{ca}, WriteOrder: true}); !ok {
		return
	}
	writeNoContent(w)
}

func (s *Server) setAllocations(w http.ResponseWriter, r *http.Request) {
	var body schema.Doc
	if !s.decodeRouteBody(w, r, &body) {
		return
	}
	if _, ok := s.apply(w, r, &state.SetAllocations{Post: true, Consumers: s.consumersOf(r, body), WriteOrder: true}); !ok {
		return
	}
	writeNoContent(w)
}

func (s *Server) deleteConsumerAllocations(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.apply(w, r, &state.DeleteConsumerAllocations{Consumer: pathConsumer(r)}); !ok {
		return
	}
	writeNoContent(w)
}

// providerResourcesJSON is one provider's part of a consumer's allocations.
type providerResourcesJSON struct {
	Resources  *dict `json:"resources"` // class -> used
	Generation int64 `json:"generation"`
}

// consumerAllocationsJSON is upstream's _serialize_allocations_for_consumer:
// providers and their classes in the order of the allocations (upstream's
// rows, in the order they were written).
type consumerAllocationsJSON struct {
	Allocations        *dict   `json:"allocations"` // provider -> *providerResourcesJSON
	ProjectID          *string `json:"project_id,omitempty"`
	UserID             *string `json:"user_id,omitempty"`
	ConsumerGeneration *int64  `json:"consumer_generation,omitempty"`
	ConsumerType       *string `json:"consumer_type,omitempty"`
}

// allocationsModified is upstream's _last_modified_from_allocations for one
// consumer: its latest allocation write, which the consumer's Updated
// records (zero, meaning now, when it has no allocations).
func allocationsModified(c *state.Consumer) time.Time {
	if c == nil || len(c.Allocations) == 0 {
		return time.Time{}
	}
	return c.Updated
}

func (s *Server) getConsumerAllocations(w http.ResponseWriter, r *http.Request) {
	consumer := pathConsumer(r)
	st, ok := s.version(w, r)
	if !ok {
		return
	}
	c := st.Consumers.Get(consumer)
	out := consumerAllocationsJSON{Allocations: newDict()}
	var allocs []state.Allocation
	if c != nil {
		allocs = c.Allocations
	}
	for _, a := range allocs {
		v, ok := out.Allocations.get(a.ProviderUUID)
		if !ok {
			v = &providerResourcesJSON{Resources: newDict(), Generation: st.Providers.Get(a.ProviderUUID).Generation}
			out.Allocations.set(a.ProviderUUID, v)
		}
		v.(*providerResourcesJSON).Resources.set(a.Class, a.Used)
	}
	v := versionOf(r)
	if len(allocs) > 0 && v.AtLeast(12) {
		out.ProjectID, out.UserID = &c.ProjectID, &c.UserID
		if v.AtLeast(28) {
			out.ConsumerGeneration = &c.Generation
		}
		if v.AtLeast(38) {
			t := c.Type
			if t == "" {
				t = state.UnknownConsumerType
			}
			out.ConsumerType = &t
		}
	}
	setLastModified(w, r, allocationsModified(c))
	writeJSON(w, http.StatusOK, out)
}

// providerConsumerJSON is one consumer's part of a provider's allocations.
type providerConsumerJSON struct {
	Resources          *dict  `json:"resources"` // class -> used
	ConsumerGeneration *int64 `json:"consumer_generation,omitempty"`
}

func (s *Server) listProviderAllocations(w http.ResponseWriter, r *http.Request) {
	uuid := mux.Vars(r)["uuid"]
	var found bool
	var generation int64
	var allocs []state.ProviderAllocation
	if !s.read(w, r, func(st *state.Store) {
		p := st.Providers.Get(uuid)
		if p == nil {
			return
		}
		found, generation = true, p.Generation
		allocs = st.ProviderAllocations(uuid)
		// Upstream reads these rows through its (provider, class, used)
		// index: by class id, then amount, then in the order they were
		// written; consumers and their classes come out in that order.
		slices.SortStableFunc(allocs, func(a, b state.ProviderAllocation) int {
			if c := st.Classes.Get(a.Class).ID - st.Classes.Get(b.Class).ID; c != 0 {
				return c
			}
			if c := cmp.Compare(a.Used, b.Used); c != 0 {
				return c
			}
			return a.Written.Compare(b.Written)
		})
	}) {
		return
	}
	if !found {
		writeError(w, r, http.StatusNotFound, fmt.Sprintf(
			"Resource provider '%s' not found: No resource provider with uuid %s found", uuid, uuid), "")
		return
	}
	showGeneration := versionOf(r).AtLeast(28)
	byConsumer := newDict()
	var modified time.Time
	for i := range allocs {
		a := &allocs[i]
		v, ok := byConsumer.get(a.ConsumerUUID)
		if !ok {
			pc := &providerConsumerJSON{Resources: newDict()}
			if showGeneration {
				pc.ConsumerGeneration = &a.ConsumerGeneration
			}
			v = pc
			byConsumer.set(a.ConsumerUUID, v)
		}
		v.(*providerConsumerJSON).Resources.set(a.Class, a.Used)
		modified = latest(modified, a.Written)
	}
	setLastModified(w, r, modified)
	writeJSON(w, http.StatusOK, struct {
		Allocations *dict `json:"allocations"` // consumer -> *providerConsumerJSON
		Generation  int64 `json:"resource_provider_generation"`
	}{byConsumer, generation})
}
