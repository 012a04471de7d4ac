package httpapi

import (
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/placementd/placementd/httpapi/schema"
)

// The route table: every path, method and microversion range the API
// serves, with what upstream checks before a handler's body runs. It is
// upstream's ROUTE_DECLARATIONS (handler.py) with each handler's
// decorators (microversion.version_handler, util.check_accept,
// util.require_content), its first statement (context.can, the policy
// rule) and its schema choice by microversion, in one place. Routing, the
// 405 answer and its Allow header, the 404 below a method's first
// microversion, the 406 of the Accept check, the 415 of the content-type
// check, the policy check and the body and query schemas all follow from
// it; handlers parse, call the domain and encode.

// endpoint is one line of the table: a method of a path over a range of
// microversions.
type endpoint struct {
	path, method string
	// min and max bound the microversions (1.min to 1.max; max 0: the
	// latest) the line serves. A method may have several lines with
	// disjoint ranges (upstream's several version_handler functions of
	// one name); a request at a version no line serves gets belowMin
	// (version_handler's status_code: 404 unless set).
	min, max int
	belowMin int
	// accept is check_accept('application/json') (406); content is
	// require_content('application/json') (415). They run after the
	// version check unless checksFirst: upstream decorates the aggregates
	// handlers with them outside version_handler.
	accept, content, checksFirst bool
	// policy is the rule the handler's context.can checks first ("": none,
	// as for the version document); target gives the rule's target (nil:
	// the caller's own project and user).
	policy string
	target func(r *http.Request) map[string]string
	// body and query are the JSON schemas of the request body and query
	// string by microversion (handlers apply them with decodeRouteBody and
	// validateRouteQuery, at the point upstream does).
	body, query versioned
	handler     http.HandlerFunc
}

// versioned lists schemas by the first microversion each applies from,
// in ascending order.
type versioned []sinceSchema

type sinceSchema struct {
	minor  int
	schema *schema.Schema
}

// always is one schema for every microversion.
func always(sch *schema.Schema) versioned { return versioned{{0, sch}} }

// at is the schema for version v (nil if none applies).
func (vs versioned) at(v Version) *schema.Schema {
	var sch *schema.Schema
	for _, s := range vs {
		if v.AtLeast(s.minor) {
			sch = s.schema
		}
	}
	return sch
}

// serves reports whether the line serves microversion v.
func (e *endpoint) serves(v Version) bool {
	return v.AtLeast(e.min) && (e.max == 0 || !v.AtLeast(e.max+1))
}

// table is the route table, in upstream's declaration order (the order of
// paths, and of methods in Allow headers).
func (s *Server) table() []endpoint {
	const (
		rc      = "placement:resource_classes:"
		rp      = "placement:resource_providers:"
		inv     = "placement:resource_providers:inventories:"
		agg     = "placement:resource_providers:aggregates:"
		alloc   = "placement:allocations:"
		trait   = "placement:traits:"
		rpTrait = "placement:resource_providers:traits:"
	)
	return []endpoint{
		{path: "/", method: "GET", handler: s.home},

		{path: "/resource_classes", method: "GET", min: 2, accept: true, policy: rc + "list",
			handler: s.listResourceClasses},
		{path: "/resource_classes", method: "POST", min: 2, content: true, policy: rc + "create",
			body: always(postResourceClassSchema), handler: s.createResourceClass},
		{path: "/resource_classes/{name}", method: "GET", min: 2, accept: true, policy: rc + "show",
			handler: s.getResourceClass},
		// Before 1.7 PUT renames a custom class; from 1.7 a bodiless PUT
		// creates one.
		{path: "/resource_classes/{name}", method: "PUT", min: 2, max: 6, content: true, policy: rc + "update",
			body: always(postResourceClassSchema), handler: s.renameResourceClass},
		{path: "/resource_classes/{name}", method: "PUT", min: 7, policy: rc + "update",
			handler: s.putResourceClass},
		{path: "/resource_classes/{name}", method: "DELETE", min: 2, policy: rc + "delete",
			handler: s.deleteResourceClass},

		{path: "/resource_providers", method: "GET", accept: true, policy: rp + "list",
			query: versioned{{0, listProvidersSchema10}, {3, listProvidersSchema13}, {4, listProvidersSchema14},
				{14, listProvidersSchema114}, {18, listProvidersSchema118}},
			handler: s.listResourceProviders},
		{path: "/resource_providers", method: "POST", content: true, policy: rp + "create",
			body:    versioned{{0, postProviderSchema}, {14, postProviderSchema114}},
			handler: s.createResourceProvider},
		{path: "/resource_providers/{uuid}", method: "GET", accept: true, policy: rp + "show",
			handler: s.getResourceProvider},
		{path: "/resource_providers/{uuid}", method: "DELETE", policy: rp + "delete",
			handler: s.deleteResourceProvider},
		{path: "/resource_providers/{uuid}", method: "PUT", content: true, policy: rp + "update",
			body:    versioned{{0, putProviderSchema}, {14, putProviderSchema114}},
			handler: s.updateResourceProvider},

		{path: "/resource_providers/{uuid}/inventories", method: "GET", accept: true, policy: inv + "list",
			handler: s.getInventories},
		{path: "/resource_providers/{uuid}/inventories", method: "POST", content: true, policy: inv + "create",
			body: always(postInventorySchema), handler: s.createInventory},
		{path: "/resource_providers/{uuid}/inventories", method: "PUT", content: true, policy: inv + "update",
			body: always(putInventoriesSchema), handler: s.setInventories},
		{path: "/resource_providers/{uuid}/inventories", method: "DELETE", min: 5, belowMin: http.StatusMethodNotAllowed,
			policy: inv + "delete", handler: s.deleteInventories},
		{path: "/resource_providers/{uuid}/inventories/{resource_class}", method: "GET", accept: true, policy: inv + "show",
			handler: s.getInventory},
		{path: "/resource_providers/{uuid}/inventories/{resource_class}", method: "PUT", content: true, policy: inv + "update",
			body: always(baseInventorySchema), handler: s.updateInventory},
		{path: "/resource_providers/{uuid}/inventories/{resource_class}", method: "DELETE", policy: inv + "delete",
			handler: s.deleteInventory},

		{path: "/resource_providers/{uuid}/usages", method: "GET", accept: true, policy: rp + "usages",
			handler: s.listProviderUsages},

		{path: "/resource_providers/{uuid}/aggregates", method: "GET", min: 1, accept: true, checksFirst: true,
			policy: agg + "list", handler: s.getAggregates},
		{path: "/resource_providers/{uuid}/aggregates", method: "PUT", min: 1, content: true, checksFirst: true,
			policy: agg + "update", body: versioned{{1, putAggregatesSchema11}, {19, putAggregatesSchema119}},
			handler: s.setAggregates},

		{path: "/resource_providers/{uuid}/allocations", method: "GET", accept: true, policy: rp + "allocations:list",
			handler: s.listProviderAllocations},

		{path: "/allocations", method: "POST", min: 13, content: true, policy: alloc + "manage",
			body: versioned{{13, postAllocationsSchema13}, {28, postAllocationsSchema28},
				{34, postAllocationsSchema34}, {38, postAllocationsSchema38}},
			handler: s.setAllocations},
		{path: "/allocations/{consumer_uuid}", method: "GET", accept: true, policy: alloc + "list",
			handler: s.getConsumerAllocations},
		{path: "/allocations/{consumer_uuid}", method: "PUT", content: true, policy: alloc + "update",
			body: versioned{{0, putAllocationsSchema}, {8, putAllocationsSchema8}, {12, putAllocationsSchema12},
				{28, putAllocationsSchema28}, {34, putAllocationsSchema34}, {38, putAllocationsSchema38}},
			handler: s.setConsumerAllocations},
		{path: "/allocations/{consumer_uuid}", method: "DELETE", policy: alloc + "delete",
			handler: s.deleteConsumerAllocations},

		{path: "/allocation_candidates", method: "GET", min: 10, accept: true,
			policy: "placement:allocation_candidates:list",
			query: versioned{{10, acSchema110}, {16, acSchema116}, {17, acSchema117}, {21, acSchema121},
				{25, acSchema125}, {31, acSchema131}, {33, acSchema133}, {35, acSchema135}, {36, acSchema136}},
			handler: s.listAllocationCandidates},

		{path: "/traits", method: "GET", min: 6, accept: true, policy: trait + "list",
			query: always(listTraitsSchema), handler: s.listTraits},
		{path: "/traits/{name}", method: "GET", min: 6, policy: trait + "show", handler: s.getTrait},
		{path: "/traits/{name}", method: "PUT", min: 6, policy: trait + "update", handler: s.putTrait},
		{path: "/traits/{name}", method: "DELETE", min: 6, policy: trait + "delete", handler: s.deleteTrait},

		{path: "/resource_providers/{uuid}/traits", method: "GET", min: 6, accept: true, policy: rpTrait + "list",
			handler: s.listProviderTraits},
		{path: "/resource_providers/{uuid}/traits", method: "PUT", min: 6, content: true, policy: rpTrait + "update",
			body: always(setProviderTraitsSchema), handler: s.updateProviderTraits},
		{path: "/resource_providers/{uuid}/traits", method: "DELETE", min: 6, policy: rpTrait + "delete",
			handler: s.deleteProviderTraits},

		// GET /usages checks its rule against the project asked about.
		{path: "/usages", method: "GET", min: 9, accept: true, policy: "placement:usages",
			target: func(r *http.Request) map[string]string {
				return map[string]string{"project_id": queryLast(r, "project_id")}
			},
			query:   versioned{{0, usagesQuerySchema}, {38, usagesQuerySchema38}},
			handler: s.getTotalUsages},

		{path: "/reshaper", method: "POST", min: 30, content: true, policy: "placement:reshaper:reshape",
			body:    versioned{{30, reshaperSchema}, {34, reshaperSchema34}, {38, reshaperSchema38}},
			handler: s.reshape},
	}
}

// route is one path with its table lines, paths and methods in table
// order.
type route struct {
	path    string
	methods []endpoint
}

// routes groups the table by path.
func (s *Server) routes() []route {
	var out []route
	at := map[string]int{}
	for _, e := range s.table() {
		i, ok := at[e.path]
		if !ok {
			i = len(out)
			at[e.path] = i
			out = append(out, route{path: e.path})
		}
		out[i].methods = append(out[i].methods, e)
	}
	return out
}

// Routes lists every route's path template (as metrics label requests)
// with its methods, in declaration order.
func Routes() []RouteMethods {
	var out []RouteMethods
	for _, r := range (&Server{}).routes() {
		out = append(out, RouteMethods{Path: r.path, Methods: methodNames(r.methods)})
	}
	return out
}

// RouteMethods is a route's path template and methods.
type RouteMethods struct {
	Path    string
	Methods []string
}

// methodNames lists the methods of a route's lines, each once, in order.
func methodNames(lines []endpoint) []string {
	var names []string
	for _, e := range lines {
		if len(names) == 0 || names[len(names)-1] != e.method {
			names = append(names, e.method)
		}
	}
	return names
}

// endpointOf is the table line serving the request (kept in its info).
func endpointOf(r *http.Request) *endpoint {
	if i, ok := r.Context().Value(infoKey{}).(*reqInfo); ok && i.endpoint != nil {
		return i.endpoint
	}
	return &endpoint{}
}

// decodeRouteBody is decodeBody with the body schema the table gives for
// the request's microversion.
func (s *Server) decodeRouteBody(w http.ResponseWriter, r *http.Request, dst any) bool {
	return s.decodeBody(w, r, endpointOf(r).body.at(versionOf(r)), dst)
}

// validateRouteQuery is validateQuery with the query schema the table
// gives for the request's microversion.
func validateRouteQuery(w http.ResponseWriter, r *http.Request) bool {
	return validateQuery(w, r, endpointOf(r).query.at(versionOf(r)))
}

// methodDispatch serves one path: upstream's handle_405 for a method the
// path lacks, then the table's checks for the line serving the request's
// microversion, in upstream's order, then the handler.
func (s *Server) methodDispatch(lines []endpoint) http.Handler {
	allow := strings.Join(methodNames(lines), ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var first *endpoint // the method's first line
		for i := range lines {
			if lines[i].method == r.Method {
				first = &lines[i]
				break
			}
		}
		if first == nil {
			w.Header().Set("Allow", allow)
			writeError(w, r, http.StatusMethodNotAllowed, "The method specified is not allowed for this resource.", "")
			return
		}
		r = mux.SetURLVars(r, wsgiPathVars(mux.Vars(r)))
		if first.checksFirst && !mediaChecks(w, r, first) {
			return
		}
		v := versionOf(r)
		var e *endpoint
		for i := range lines {
			if lines[i].method == r.Method && lines[i].serves(v) {
				e = &lines[i]
				break
			}
		}
		if e == nil {
			status := first.belowMin
			if status == 0 {
				status = http.StatusNotFound
			}
			writeError(w, r, status, "", "")
			return
		}
		if !e.checksFirst && !mediaChecks(w, r, e) {
			return
		}
		if e.policy != "" {
			var target map[string]string
			if e.target != nil {
				target = e.target(r)
			}
			if !s.authorize(w, r, e.policy, target) {
				return
			}
		}
		infoOf(r).endpoint = e
		e.handler(w, r)
	})
}

// mediaChecks runs check_accept and require_content as the line asks.
func mediaChecks(w http.ResponseWriter, r *http.Request, e *endpoint) bool {
	return (!e.accept || checkAccept(w, r)) && (!e.content || requireJSON(w, r))
}

// wsgiPathVars gives path variables as upstream's handlers see them: a
// WSGI server decodes the (percent-decoded) path as Latin-1, so a
// non-ASCII name reaches them, and their messages, one character per
// byte of its UTF-8 ("%C3%89" is "Ã\x89", not "É"). Names and uuids that
// can exist are ASCII, which this leaves alone.
func wsgiPathVars(vars map[string]string) map[string]string {
	out := make(map[string]string, len(vars))
	for k, v := range vars {
		out[k] = latin1(v)
	}
	return out
}
