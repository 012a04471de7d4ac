package httpapi

import "net/http"

// routes is upstream's ROUTE_DECLARATIONS: every path and its methods.
func (s *Server) routes() []route {
	m := func(method string, h http.HandlerFunc) methodHandler { return methodHandler{method, h} }
	return []route{
		{"/", []methodHandler{m("GET", s.home)}},
		{"/resource_classes", []methodHandler{m("GET", s.listResourceClasses), m("POST", s.createResourceClass)}},
		{"/resource_classes/{name}", []methodHandler{m("GET", s.getResourceClass), m("PUT", s.updateResourceClass), m("DELETE", s.deleteResourceClass)}},
		{"/resource_providers", []methodHandler{m("GET", s.listResourceProviders), m("POST", s.createResourceProvider)}},
		{"/resource_providers/{uuid}", []methodHandler{m("GET", s.getResourceProvider), m("DELETE", s.deleteResourceProvider), m("PUT", s.updateResourceProvider)}},
		{"/resource_providers/{uuid}/inventories", []methodHandler{m("GET", s.getInventories), m("POST", s.createInventory), m("PUT", s.setInventories), m("DELETE", s.deleteInventories)}},
		{"/resource_providers/{uuid}/inventories/{resource_class}", []methodHandler{m("GET", s.getInventory), m("PUT", s.updateInventory), m("DELETE", s.deleteInventory)}},
		{"/resource_providers/{uuid}/usages", []methodHandler{m("GET", s.listProviderUsages)}},
		{"/resource_providers/{uuid}/aggregates", []methodHandler{m("GET", s.getAggregates), m("PUT", s.setAggregates)}},
		{"/resource_providers/{uuid}/allocations", []methodHandler{m("GET", s.listProviderAllocations)}},
		{"/allocations", []methodHandler{m("POST", s.setAllocations)}},
		{"/allocations/{consumer_uuid}", []methodHandler{m("GET", s.getConsumerAllocations), m("PUT", s.setConsumerAllocations), m("DELETE", s.deleteConsumerAllocations)}},
		{"/allocation_candidates", []methodHandler{m("GET", s.listAllocationCandidates)}},
		{"/traits", []methodHandler{m("GET", s.listTraits)}},
		{"/traits/{name}", []methodHandler{m("GET", s.getTrait), m("PUT", s.putTrait), m("DELETE", s.deleteTrait)}},
		{"/resource_providers/{uuid}/traits", []methodHandler{m("GET", s.listProviderTraits), m("PUT", s.updateProviderTraits), m("DELETE", s.deleteProviderTraits)}},
		{"/usages", []methodHandler{m("GET", s.getTotalUsages)}},
		{"/reshaper", []methodHandler{m("POST", s.reshape)}},
	}
}

// Routes lists every route's path template (as metrics label requests)
// with its methods, in declaration order.
func Routes() []RouteMethods {
	var out []RouteMethods
	for _, r := range (&Server{}).routes() {
		rm := RouteMethods{Path: r.path}
		for _, m := range r.methods {
			rm.Methods = append(rm.Methods, m.method)
		}
		out = append(out, rm)
	}
	return out
}

// RouteMethods is a route's path template and methods.
type RouteMethods struct {
	Path    string
	Methods []string
}
