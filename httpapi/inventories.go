package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi/schema"
)

// inventoryFieldsJSON are the properties of one inventory record in
// upstream's schemas/inventory.py; every inventory schema (and the
// reshaper's) is built from them, as upstream builds its schemas by copying
// BASE_INVENTORY_SCHEMA.
const inventoryFieldsJSON = `
	"resource_provider_generation": {"type": "integer"},
	"total": {"type": "integer", "maximum": 2147483647, "minimum": 1},
	"reserved": {"type": "integer", "maximum": 2147483647, "minimum": 0},
	"min_unit": {"type": "integer", "maximum": 2147483647, "minimum": 1},
	"max_unit": {"type": "integer", "maximum": 2147483647, "minimum": 1},
	"step_size": {"type": "integer", "maximum": 2147483647, "minimum": 1},
	"allocation_ratio": {"type": "number", "maximum": 3.40282e+38}`

// inventoryRecordJSON is one record of a PUT of all inventories (also the
// reshaper's): only total is required.
const inventoryRecordJSON = `{
	"type": "object",
	"properties": {` + inventoryFieldsJSON + `},
	"required": ["total"],
	"additionalProperties": false
}`

// Inventory schemas: BASE is the PUT of one class; POST adds
// resource_class and does not require the generation.
var (
	baseInventorySchema = schema.MustCompileBody(`{
		"type": "object",
		"properties": {` + inventoryFieldsJSON + `},
		"required": ["total", "resource_provider_generation"],
		"additionalProperties": false
	}`)
	postInventorySchema = schema.MustCompileBody(`{
		"type": "object",
		"properties": {` + inventoryFieldsJSON + `,
			"resource_class": {"type": "string", "pattern": "^[A-Z0-9_]+$"}
		},
		"required": ["total", "resource_class"],
		"additionalProperties": false
	}`)
	putInventoriesSchema = schema.MustCompileBody(`{
		"type": "object",
		"properties": {
			"resource_provider_generation": {"type": "integer"},
			"inventories": {
				"type": "object",
				"patternProperties": {"^[A-Z0-9_]+$": ` + inventoryRecordJSON + `}
			}
		},
		"required": ["resource_provider_generation", "inventories"],
		"additionalProperties": false
	}`)
)

// pyFloat is a float written as Python's json module writes one (1.0, not
// 1), as upstream shows allocation_ratio.
type pyFloat float64

func (f pyFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil, fmt.Errorf("unsupported float %v", v)
	}
	// repr() switches to exponent notation below 1e-4 and from 1e16.
	if a := math.Abs(v); a != 0 && (a < 1e-4 || a >= 1e16) {
		return []byte(strconv.FormatFloat(v, 'e', -1, 64)), nil
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return []byte(s), nil
}

// inventoryJSON is upstream's _serialize_inventory, fields in its order.
// The generation shows only when non-zero (upstream tests `if generation`),
// and never inside a list of inventories.
type inventoryJSON struct {
	Total           any   `json:"total"`
	Reserved        any   `json:"reserved"`
	MinUnit         any   `json:"min_unit"`
	MaxUnit         any   `json:"max_unit"`
	StepSize        any   `json:"step_size"`
	AllocationRatio any   `json:"allocation_ratio"`
	Generation      int64 `json:"resource_provider_generation,omitempty"`
}

// serializeInventory shows a stored inventory (integers, and a float
// ratio as Python shows floats). rec, when not nil, is the request record
// that wrote it: upstream answers a write with the values as it decoded
// them from the request, so a number written 2 (or 1.0) comes back so.
func serializeInventory(inv state.Inventory, generation int64, rec map[string]json.RawMessage) inventoryJSON {
	out := inventoryJSON{
		Total: inv.Total, Reserved: inv.Reserved, MinUnit: inv.MinUnit, MaxUnit: inv.MaxUnit,
		StepSize: inv.StepSize, AllocationRatio: pyFloat(inv.AllocationRatio), Generation: generation,
	}
	for field, dst := range map[string]*any{
		"total": &out.Total, "reserved": &out.Reserved, "min_unit": &out.MinUnit, "max_unit": &out.MaxUnit,
		"step_size": &out.StepSize, "allocation_ratio": &out.AllocationRatio,
	} {
		if raw, ok := rec[field]; ok {
			*dst = pyNumber(raw)
		}
	}
	return out
}

// pyNumber is a JSON number as json.dumps writes back what json.loads
// read: an int in its canonical form, a float as Python's repr.
func pyNumber(raw json.RawMessage) json.RawMessage {
	lit := strings.TrimSpace(string(raw))
	if strings.ContainsAny(lit, ".eE") {
		f, err := strconv.ParseFloat(lit, 64)
		if b, merr := pyFloat(f).MarshalJSON(); err == nil && merr == nil {
			return b
		}
		return raw
	}
	if n, ok := new(big.Int).SetString(lit, 10); ok {
		return json.RawMessage(n.String())
	}
	return raw
}

type inventoriesJSON struct {
	Generation  int64 `json:"resource_provider_generation"`
	Inventories *dict `json:"inventories"` // class -> inventoryJSON
}

// sendInventories is upstream's _send_inventories. With no inventory
// there is no Last-Modified (upstream sets it to None), only Cache-Control.
// The inventories come in the order given: upstream's class id order for a
// read (its query's index), the request's for a write, whose records
// (recs, by class) it echoes.
func sendInventories(w http.ResponseWriter, r *http.Request, generation int64, invs []state.InventoryResult, recs map[string]map[string]json.RawMessage) {
	out := inventoriesJSON{Generation: generation, Inventories: newDict()}
	var modified time.Time
	for _, ir := range invs {
		out.Inventories.set(ir.Class, serializeInventory(ir.Inventory, 0, recs[ir.Class]))
		modified = latest(modified, inventoryModified(ir.Inventory))
	}
	if versionOf(r).AtLeast(15) {
		if len(invs) > 0 {
			setLastModified(w, r, modified)
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// inventoryModified is upstream's pick_last_modified for one record.
func inventoryModified(inv state.Inventory) time.Time {
	if !inv.Updated.IsZero() {
		return inv.Updated
	}
	return inv.Created
}

// sendInventory is upstream's _send_inventory; rec is the request record of
// a write (see serializeInventory).
func sendInventory(w http.ResponseWriter, r *http.Request, status int, ir state.InventoryResult, rec map[string]json.RawMessage) {
	setLastModified(w, r, inventoryModified(ir.Inventory))
	writeJSON(w, status, serializeInventory(ir.Inventory, ir.Generation, rec))
}

// inventoryURL is upstream's util.inventory_url.
func inventoryURL(uuid, class string) string {
	return providerURL(uuid) + "/inventories/" + class
}

// absoluteURL makes a Location absolute against the request, as webob does
// with a relative Location when it sends the response.
func absoluteURL(r *http.Request, path string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + path
}

// requireProvider answers 404 unless the provider exists. Upstream looks
// the provider up before it reads the body.
func (s *Server) requireProvider(w http.ResponseWriter, r *http.Request, uuid string) bool {
	_, found, ok := s.readProvider(w, r, uuid)
	if ok && !found {
		writeStateError(w, r, state.ProviderNotFound(uuid))
	}
	return ok && found
}

// jsonInt reads an integer field already validated by a schema. JSON
// Schema counts 1.0 as an integer, so the number is read as a float when
// it is not written as an integer. ok is false when it does not fit.
func jsonInt(raw json.RawMessage) (n int64, ok bool) { return literalInt(string(raw)) }

// literalInt is jsonInt of a number's literal.
func literalInt(lit string) (n int64, ok bool) {
	if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// jsonGeneration reads a client's resource_provider_generation; one that
// does not fit an int64 can match no provider, so it becomes -1.
func jsonGeneration(raw json.RawMessage) int64 {
	if n, ok := jsonInt(raw); ok {
		return n
	}
	return -1
}

// inventoryValues builds one class's inventory from a validated body
// record, filling upstream's INVENTORY_DEFAULTS.
func inventoryValues(class string, rec map[string]json.RawMessage) state.InventoryValues {
	v := state.InventoryValues{
		Class: class, Reserved: 0, MinUnit: 1, MaxUnit: state.MaxInt, StepSize: 1, AllocationRatio: 1.0,
	}
	for field, dst := range map[string]*int64{
		"total": &v.Total, "reserved": &v.Reserved, "min_unit": &v.MinUnit,
		"max_unit": &v.MaxUnit, "step_size": &v.StepSize,
	} {
		if raw, ok := rec[field]; ok {
			*dst, _ = jsonInt(raw)
		}
	}
	if raw, ok := rec["allocation_ratio"]; ok {
		v.AllocationRatio, _ = strconv.ParseFloat(string(raw), 64)
	}
	return v
}

// objectKeys lists a JSON object's keys in document order, each once at
// its first position (a Python dict built from the document). Callers
// pass documents json.Unmarshal has accepted; it scans them byte by byte
// (every PUT /allocations reads two levels of keys) and leaves anything
// unusual, escaped keys included, to encoding/json.
func objectKeys(raw json.RawMessage) []string {
	if keys, ok := scanObjectKeys(raw); ok {
		return keys
	}
	return decodeObjectKeys(raw)
}

// scanObjectKeys is objectKeys for an object whose keys hold no escapes;
// ok is false when raw is not such an object.
func scanObjectKeys(raw []byte) (keys []string, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	depth := 0
	expectKey := false
	var seen map[string]bool
	for ; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '{', '[':
			depth++
			expectKey = depth == 1 && c == '{'
		case '}', ']':
			depth--
			if depth == 0 {
				return keys, skipSpace(raw, i+1) == len(raw)
			}
		case ',':
			expectKey = depth == 1
		case '"':
			end := i + 1
			for end < len(raw) && raw[end] != '"' {
				if raw[end] == '\\' {
					return nil, false
				}
				end++
			}
			if end == len(raw) {
				return nil, false
			}
			if expectKey {
				k := string(raw[i+1 : end])
				if seen == nil && len(keys) >= 16 {
					// Many keys: a set rather than a quadratic scan.
					seen = make(map[string]bool, 2*len(keys))
					for _, k := range keys {
						seen[k] = true
					}
				}
				if seen != nil && !seen[k] || seen == nil && !slices.Contains(keys, k) {
					keys = append(keys, k)
					if seen != nil {
						seen[k] = true
					}
				}
				expectKey = false
			}
			i = end
		}
	}
	return nil, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// decodeObjectKeys is objectKeys by encoding/json's tokenizer.
func decodeObjectKeys(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

func (s *Server) getInventories(w http.ResponseWriter, r *http.Request) {
	uuid := mux.Vars(r)["uuid"]
	var found bool
	var generation int64
	var invs []state.InventoryResult
	if !s.read(w, r, func(st *state.Store) {
		if p := st.Providers.Get(uuid); p != nil {
			found, generation, invs = true, p.Generation, p.ProviderInventories()
			slices.SortStableFunc(invs, func(a, b state.InventoryResult) int { return st.Classes.Get(a.Class).ID - st.Classes.Get(b.Class).ID })
		}
	}) {
		return
	}
	if !found {
		writeError(w, r, http.StatusNotFound, fmt.Sprintf("No resource provider with uuid %s found : %s",
			uuid, state.ProviderNotFound(uuid).Detail), "")
		return
	}
	sendInventories(w, r, generation, invs, nil)
}

func (s *Server) getInventory(w http.ResponseWriter, r *http.Request) {
	uuid, class := mux.Vars(r)["uuid"], mux.Vars(r)["resource_class"]
	var found bool
	var inv *state.InventoryResult
	if !s.read(w, r, func(st *state.Store) {
		if p := st.Providers.Get(uuid); p != nil {
			found = true
			if i := p.Inventories[class]; i != nil {
				inv = &state.InventoryResult{Class: class, Inventory: *i, Generation: p.Generation}
			}
		}
	}) {
		return
	}
	if !found {
		writeError(w, r, http.StatusNotFound, fmt.Sprintf("No resource provider with uuid %s found : %s",
			uuid, state.ProviderNotFound(uuid).Detail), "")
		return
	}
	if inv == nil {
		writeError(w, r, http.StatusNotFound, fmt.Sprintf("No inventory of class %s for %s", class, uuid), "")
		return
	}
	sendInventory(w, r, http.StatusOK, *inv, nil)
}

func (s *Server) createInventory(w http.ResponseWriter, r *http.Request) {
	uuid := mux.Vars(r)["uuid"]
	if !s.requireProvider(w, r, uuid) {
		return
	}
	var body map[string]json.RawMessage
	if !s.decodeRouteBody(w, r, &body) {
		return
	}
	var class string
	json.Unmarshal(body["resource_class"], &class)
	v, ok := s.apply(w, r, &state.CreateInventory{
		Provider: uuid, Inventory: inventoryValues(class, body),
		ReservedCanBeTotal: versionOf(r).AtLeast(26),
	})
	if !ok {
		return
	}
	w.Header().Set("Location", absoluteURL(r, inventoryURL(uuid, class)))
	sendInventory(w, r, http.StatusCreated, v.(state.InventoryResult), body)
}

func (s *Server) updateInventory(w http.ResponseWriter, r *http.Request) {
	uuid, class := mux.Vars(r)["uuid"], mux.Vars(r)["resource_class"]
	if !s.requireProvider(w, r, uuid) {
		return
	}
	var body map[string]json.RawMessage
	if !s.decodeRouteBody(w, r, &body) {
		return
	}
	v, ok := s.apply(w, r, &state.UpdateInventory{
		Provider: uuid, Generation: jsonGeneration(body["resource_provider_generation"]),
		Inventory: inventoryValues(class, body), ReservedCanBeTotal: versionOf(r).AtLeast(26),
	})
	if !ok {
		return
	}
	sendInventory(w, r, http.StatusOK, v.(state.InventoryResult), body)
}

func (s *Server) setInventories(w http.ResponseWriter, r *http.Request) {
	uuid := mux.Vars(r)["uuid"]
	if !s.requireProvider(w, r, uuid) {
		return
	}
	var body struct {
		Generation  json.RawMessage `json:"resource_provider_generation"`
		Inventories json.RawMessage `json:"inventories"`
	}
	if !s.decodeRouteBody(w, r, &body) {
		return
	}
	records, err := decodeEach[map[string]json.RawMessage](body.Inventories)
	if err != nil {
		writeBodyShapeError(w, r, err)
		return
	}
	cmd := &state.SetInventories{
		Provider: uuid, Generation: jsonGeneration(body.Generation),
		Inventories: []state.InventoryValues{}, ReservedCanBeTotal: versionOf(r).AtLeast(26),
	}
	for _, class := range objectKeys(body.Inventories) {
		cmd.Inventories = append(cmd.Inventories, inventoryValues(class, records[class]))
	}
	v, ok := s.apply(w, r, cmd)
	if !ok {
		return
	}
	res := v.(state.InventoriesResult)
	byClass := map[string]state.InventoryResult{}
	for _, ir := range res.Inventories {
		byClass[ir.Class] = ir
	}
	written := make([]state.InventoryResult, len(cmd.Inventories))
	for i, iv := range cmd.Inventories {
		written[i] = byClass[iv.Class]
	}
	sendInventories(w, r, res.Generation, written, records)
}

func (s *Server) deleteInventories(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.apply(w, r, &state.DeleteInventories{Provider: mux.Vars(r)["uuid"]}); !ok {
		return
	}
	writeNoContent(w)
}

func (s *Server) deleteInventory(w http.ResponseWriter, r *http.Request) {
	cmd := &state.DeleteInventory{Provider: mux.Vars(r)["uuid"], Class: mux.Vars(r)["resource_class"]}
	if _, ok := s.apply(w, r, cmd); !ok {
		return
	}
	writeNoContent(w)
}
