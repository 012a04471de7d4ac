package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

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
	var body schema.Doc
	if !s.decodeRouteBody(w, r, &body) {
		return
	}
	inventories := body.Get("inventories")
	cmd := &state.Reshape{WriteOrder: true}
	for _, key := range inventories.Keys() {
		// Providers are looked up as spelt, as upstream's get_by_uuid.
		entry, uuid := inventories.Get(key), key
		generation, _ := entry.Get("resource_provider_generation").Number()
		ri := state.ReshapeInventory{Provider: uuid, Generation: jsonGeneration(json.RawMessage(generation))}
		records := entry.Get("inventories")
		for _, class := range records.Keys() {
			rec, err := inventoryRecord(class, records.Get(class))
			if err != nil {
				writeBodyShapeError(w, r, err)
				return
			}
			ri.Inventories = append(ri.Inventories, inventoryValues(class, rec))
		}
		cmd.Inventories = append(cmd.Inventories, ri)
	}
	cmd.Allocations = s.consumersOf(r, body.Get("allocations"))
	if _, ok := s.apply(w, r, cmd); !ok {
		return
	}
	writeNoContent(w)
}

// inventoryRecord is one class's validated inventory record as
// inventoryValues reads one: each field's number literal ("null" for a
// value of another kind, which reads as no number, as the field's raw
// JSON would). The schema leaves classes outside its pattern open: a
// record of another kind than an object is refused as decoding it into a
// map would be.
func inventoryRecord(class string, rec schema.Doc) (map[string]json.RawMessage, error) {
	if kind := rec.Kind(); kind != "object" && kind != "null" {
		return nil, &shapeError{class, &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[map[string]json.RawMessage]()}}
	}
	out := make(map[string]json.RawMessage, len(rec.Keys()))
	for _, k := range rec.Keys() {
		lit, ok := rec.Get(k).Number()
		if !ok {
			lit = "null"
		}
		out[k] = json.RawMessage(lit)
	}
	return out, nil
}
