package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi/schema"
)

// reshaperSchemaJSON is upstream's POST_RESHAPER_SCHEMA: inventories as PUT
// /resource_providers/{uuid}/inventories takes them, by provider, and
// allocations as POST /allocations takes them but possibly empty.
func reshaperSchemaJSON(consumer string) string {
	return fmt.Sprintf(`{
		"type": "object",
		"properties": {
			"inventories": {
				"type": "object",
				"patternProperties": {
					%q: {
						"type": "object",
						"properties": {
							"resource_provider_generation": {"type": "integer"},
							"inventories": {"type": "object", "patternProperties": {"^[A-Z0-9_]+$": %s}}
						},
						"required": ["resource_provider_generation", "inventories"],
						"additionalProperties": false
					}
				},
				"minProperties": 1,
				"additionalProperties": false
			},
			"allocations": %s
		},
		"required": ["inventories", "allocations"],
		"additionalProperties": false
	}`, uuidKeyPattern, inventoryRecordJSON, consumersSchemaJSON(0, consumer))
}

var (
	reshaperSchema   = schema.MustCompileBody(reshaperSchemaJSON(consumerAllocationsSchemaJSON(0, true, false, false)))
	reshaperSchema34 = schema.MustCompileBody(reshaperSchemaJSON(consumerAllocationsSchemaJSON(0, true, true, false)))
	reshaperSchema38 = schema.MustCompileBody(reshaperSchemaJSON(consumerAllocationsSchemaJSON(0, true, true, true)))
)

func (s *Server) reshape(w http.ResponseWriter, r *http.Request) {
	if !s.authorize(w, r, "placement:reshaper:reshape", nil) {
		return
	}
	v := versionOf(r)
	sch := reshaperSchema
	switch {
	case v.AtLeast(38):
		sch = reshaperSchema38
	case v.AtLeast(34):
		sch = reshaperSchema34
	}
	var body struct {
		Inventories json.RawMessage `json:"inventories"`
		Allocations json.RawMessage `json:"allocations"`
	}
	if !decodeBody(w, r, sch, &body) {
		return
	}
	var byProvider map[string]struct {
		Generation  json.RawMessage `json:"resource_provider_generation"`
		Inventories json.RawMessage `json:"inventories"`
	}
	if err := json.Unmarshal(body.Inventories, &byProvider); err != nil {
		writeBodyShapeError(w, r, err)
		return
	}
	cmd := &state.Reshape{WriteOrder: true}
	for _, key := range objectKeys(body.Inventories) {
		// Providers are looked up as spelt, as upstream's get_by_uuid.
		entry, uuid := byProvider[key], key
		records, err := decodeEach[map[string]json.RawMessage](entry.Inventories)
		if err != nil {
			writeBodyShapeError(w, r, err)
			return
		}
		ri := state.ReshapeInventory{Provider: uuid, Generation: jsonGeneration(entry.Generation)}
		for _, class := range objectKeys(entry.Inventories) {
			ri.Inventories = append(ri.Inventories, inventoryValues(class, records[class]))
		}
		cmd.Inventories = append(cmd.Inventories, ri)
	}
	consumers, ok := s.consumersOf(w, r, body.Allocations)
	if !ok {
		return
	}
	cmd.Allocations = consumers
	if _, ok := s.apply(w, r, cmd); !ok {
		return
	}
	writeNoContent(w)
}
