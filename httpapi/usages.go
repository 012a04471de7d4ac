package httpapi

import (
	"fmt"
	"net/http"
	"slices"

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
	uuid := mux.Vars(r)["uuid"]
	var found bool
	var generation int64
	usages := newDict() // class -> used, in class id order (upstream's GROUP BY)
	if !s.read(w, r, func(st *state.Store) {
		if p := st.Providers.Get(uuid); p != nil {
			found, generation = true, p.Generation
			used := p.ProviderUsage()
			classes := state.SortedKeys(used)
			st.SortByClassID(classes)
			for _, c := range classes {
				usages.set(c, used[c])
			}
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
		Generation int64 `json:"resource_provider_generation"`
		Usages     *dict `json:"usages"`
	}{generation, usages})
}

func (s *Server) getTotalUsages(w http.ResponseWriter, r *http.Request) {
	project, user := queryLast(r, "project_id"), queryLast(r, "user_id")
	consumerType := queryLast(r, "consumer_type")
	byType := versionOf(r).AtLeast(38)
	if !validateRouteQuery(w, r) {
		return
	}
	var groups []state.UsageGroup
	var classes []string // every class used, in class id order
	typeID := map[string]int{"": -1}
	if !s.read(w, r, func(st *state.Store) {
		groups = st.ProjectUsage(project, user)
		seen := map[string]bool{}
		for _, g := range groups {
			for class := range g.Used {
				if !seen[class] {
					seen[class] = true
					classes = append(classes, class)
				}
			}
			if ct := st.ConsumerTypes.Get(g.Type); ct != nil {
				typeID[g.Type] = ct.ID
			}
		}
		st.SortByClassID(classes)
	}) {
		return
	}
	// Upstream's rows come grouped by class (and consumer type from 1.38,
	// an unknown type first), sorted so by its GROUP BY; its answer takes
	// classes and types in the order of those rows, and a type's consumer
	// count right after the type's first class.
	usages := newDict()
	if !byType {
		total := map[string]int64{}
		for _, g := range groups {
			for class, used := range g.Used {
				total[class] += used
			}
		}
		for _, class := range classes {
			if used, ok := total[class]; ok {
				usages.set(class, used)
			}
		}
	} else {
		type group struct {
			typeID int
			count  int
			used   map[string]int64
		}
		byName := map[string]*group{}
		add := func(name string, g state.UsageGroup) {
			o := byName[name]
			if o == nil {
				o = &group{typeID: typeID[g.Type], used: map[string]int64{}}
				byName[name] = o
			}
			o.count += g.Consumers
			for class, used := range g.Used {
				o.used[class] += used
			}
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
		names := state.SortedKeys(byName)
		slices.SortStableFunc(names, func(a, b string) int { return byName[a].typeID - byName[b].typeID })
		for _, class := range classes {
			for _, name := range names {
				o := byName[name]
				used, ok := o.used[class]
				if !ok {
					continue
				}
				v, ok := usages.get(name)
				if !ok {
					v = newDict()
					usages.set(name, v)
				}
				v.(*dict).set(class, used)
				v.(*dict).set("consumer_count", o.count)
			}
		}
	}
	usageNoCache(w, r)
	writeJSON(w, http.StatusOK, map[string]any{"usages": usages})
}
