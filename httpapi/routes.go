package httpapi

import "net/http"

// routes is upstream's ROUTE_DECLARATIONS: every path and its methods.
// Each method lists the decorators upstream's handler has between
// PlacementWsgify and its body, outermost first (gates): its first
// microversion, check_accept, require_content. The handler runs if they
// all let the request through.
func (s *Server) routes() []route {
	m := func(method string, h http.HandlerFunc, gates ...gate) methodHandler {
		return methodHandler{method, h, gates}
	}
	return []route{
		{"/", []methodHandler{m("GET", s.home)}},
		{"/resource_classes", []methodHandler{
			m("GET", s.listResourceClasses, since(2), acceptJSON),
			m("POST", s.createResourceClass, since(2), contentJSON)}},
		{"/resource_classes/{name}", []methodHandler{
			m("GET", s.getResourceClass, since(2), acceptJSON),
			// Before 1.7 it also requires content (the handler checks).
			m("PUT", s.updateResourceClass, since(2)),
			m("DELETE", s.deleteResourceClass, since(2))}},
		{"/resource_providers", []methodHandler{
			m("GET", s.listResourceProviders, acceptJSON),
			m("POST", s.createResourceProvider, contentJSON)}},
		{"/resource_providers/{uuid}", []methodHandler{
			m("GET", s.getResourceProvider, acceptJSON),
			m("DELETE", s.deleteResourceProvider),
			m("PUT", s.updateResourceProvider, contentJSON)}},
		{"/resource_providers/{uuid}/inventories", []methodHandler{
			m("GET", s.getInventories, acceptJSON),
			m("POST", s.createInventory, contentJSON),
			m("PUT", s.setInventories, contentJSON),
			m("DELETE", s.deleteInventories, sinceElse(5, http.StatusMethodNotAllowed))}},
		{"/resource_providers/{uuid}/inventories/{resource_class}", []methodHandler{
			m("GET", s.getInventory, acceptJSON),
			m("PUT", s.updateInventory, contentJSON),
			m("DELETE", s.deleteInventory)}},
		{"/resource_providers/{uuid}/usages", []methodHandler{m("GET", s.listProviderUsages, acceptJSON)}},
		{"/resource_providers/{uuid}/aggregates", []methodHandler{
			m("GET", s.getAggregates, acceptJSON, since(1)),
			m("PUT", s.setAggregates, contentJSON, since(1))}},
		{"/resource_providers/{uuid}/allocations", []methodHandler{m("GET", s.listProviderAllocations, acceptJSON)}},
		{"/allocations", []methodHandler{m("POST", s.setAllocations, since(13), contentJSON)}},
		{"/allocations/{consumer_uuid}", []methodHandler{
			m("GET", s.getConsumerAllocations, acceptJSON),
			m("PUT", s.setConsumerAllocations, contentJSON),
			m("DELETE", s.deleteConsumerAllocations)}},
		{"/allocation_candidates", []methodHandler{m("GET", s.listAllocationCandidates, since(10), acceptJSON)}},
		{"/traits", []methodHandler{m("GET", s.listTraits, since(6), acceptJSON)}},
		{"/traits/{name}", []methodHandler{
			m("GET", s.getTrait, since(6)),
			m("PUT", s.putTrait, since(6)),
			m("DELETE", s.deleteTrait, since(6))}},
		{"/resource_providers/{uuid}/traits", []methodHandler{
			m("GET", s.listProviderTraits, since(6), acceptJSON),
			m("PUT", s.updateProviderTraits, since(6), contentJSON),
			m("DELETE", s.deleteProviderTraits, since(6))}},
		{"/usages", []methodHandler{m("GET", s.getTotalUsages, since(9), acceptJSON)}},
		{"/reshaper", []methodHandler{m("POST", s.reshape, since(30), contentJSON)}},
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

// gate is one of upstream's handler decorators: it answers the request
// itself and returns false, or lets it through.
type gate func(w http.ResponseWriter, r *http.Request) bool

// since is microversion.version_handler(1.minor): below it the route does
// not exist (404).
func since(minor int) gate { return sinceElse(minor, http.StatusNotFound) }

// sinceElse is version_handler(1.minor, status_code=status).
func sinceElse(minor, status int) gate {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if versionOf(r).AtLeast(minor) {
			return true
		}
		writeError(w, r, status, "", "")
		return false
	}
}

// acceptJSON is util.check_accept('application/json') (406).
var acceptJSON gate = checkAccept

// contentJSON is util.require_content('application/json') (415).
var contentJSON gate = requireJSON
