package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi/schema"
)

// GET /usages query schemas, upstream's schemas/usage.py.
const usagesQueryProps = `"project_id": {"type": "string", "minLength": 1, "maxLength": 255},
		"user_id": {"type": "string", "minLength": 1, "maxLength": 255}`

var (
	usagesQuerySchema = schema.MustCompile(`{
		"type": "object",
		"properties": {` + usagesQueryProps + `},
		"required": ["project_id"],
		"additionalProperties": false
	}`)
	usagesQuerySchema38 = schema.MustCompile(`{
		"type": "object",
		"properties": {` + usagesQueryProps + `,
			"consumer_type": {"type": "string", "pattern": "^[A-Z0-9_]+$|^all|^unknown$", "minLength": 1, "maxLength": 255}
		},
		"required": ["project_id"],
		"additionalProperties": false
	}`)
)

// usageNoCache is what upstream sends with usages from 1.15: they are
// "now", so the last modification is now.
func usageNoCache(w http.ResponseWriter, r *http.Request) {
	setLastModified(w, r, zeroTime)
}

func (s *Server) listProviderUsages(w http.ResponseWriter, r *http.Request) {
	if !s.authorize(w, r, "placement:resource_providers:usages", nil) {
		return
	}
	uuid := mux.Vars(r)["uuid"]
	var found bool
	var generation int64
	var usages map[string]int64
	if !s.read(w, r, func(st *state.Store) {
		if p := st.Providers.Get(uuid); p != nil {
			found, generation, usages = true, p.Generation, p.ProviderUsage()
		}
	}) {
		return
	}
	if !found {
		writeError(w, r, http.StatusNotFound, fmt.Sprintf(
			"No resource provider with uuid %s found: No resource provider with uuid %s found", uuid, uuid), "")
		return
	}
	usageNoCache(w, r)
	writeJSON(w, http.StatusOK, struct {
		Generation int64            `json:"resource_provider_generation"`
		Usages     map[string]int64 `json:"usages"`
	}{generation, usages})
}

// usageGroupJSON is one consumer type's usage from 1.38: the classes and
// the consumer count side by side.
type usageGroupJSON struct {
	count int
	used  map[string]int64
}

func (g usageGroupJSON) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(g.used)+1)
	for class, used := range g.used {
		m[class] = used
	}
	m["consumer_count"] = g.count
	return json.Marshal(m)
}

func (s *Server) getTotalUsages(w http.ResponseWriter, r *http.Request) {
	project, user := queryLast(r, "project_id"), queryLast(r, "user_id")
	consumerType := queryLast(r, "consumer_type")
	if !s.authorize(w, r, "placement:usages", map[string]string{"project_id": project}) {
		return
	}
	byType := versionOf(r).AtLeast(38)
	sch := usagesQuerySchema
	if byType {
		sch = usagesQuerySchema38
	}
	if !validateQuery(w, r, sch) {
		return
	}
	var groups []state.UsageGroup
	if !s.read(w, r, func(st *state.Store) { groups = st.ProjectUsage(project, user) }) {
		return
	}
	var usages any
	if !byType {
		total := map[string]int64{}
		for _, g := range groups {
			for class, used := range g.Used {
				total[class] += used
			}
		}
		usages = total
	} else {
		out := map[string]usageGroupJSON{}
		add := func(name string, g state.UsageGroup) {
			o := out[name]
			if o.used == nil {
				o.used = map[string]int64{}
			}
			o.count += g.Consumers
			for class, used := range g.Used {
				o.used[class] += used
			}
			out[name] = o
		}
		for _, g := range groups {
			name := g.Type
			if name == "" {
				name = state.UnknownConsumerType
			}
			switch consumerType {
			case "":
				add(name, g)
			case "all":
				add("all", g)
			case state.UnknownConsumerType:
				if g.Type == "" {
					add(name, g)
				}
			default:
				if g.Type == consumerType {
					add(name, g)
				}
			}
		}
		usages = out
	}
	usageNoCache(w, r)
	writeJSON(w, http.StatusOK, map[string]any{"usages": usages})
}
