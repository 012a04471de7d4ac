package difftest

import (
	"fmt"
	"net/http"
	"path"
	"regexp"
	"sort"
	"strings"
)

// upstreamRoutes are upstream's ROUTE_DECLARATIONS paths: a divergence is
// named after the route its request matched.
var upstreamRoutes = []string{
	"/", "/resource_classes", "/resource_classes/{name}",
	"/resource_providers", "/resource_providers/{uuid}",
	"/resource_providers/{uuid}/inventories", "/resource_providers/{uuid}/inventories/{resource_class}",
	"/resource_providers/{uuid}/usages", "/resource_providers/{uuid}/aggregates",
	"/resource_providers/{uuid}/allocations", "/resource_providers/{uuid}/traits",
	"/allocations", "/allocations/{consumer_uuid}", "/allocation_candidates",
	"/traits", "/traits/{name}", "/usages", "/reshaper",
}

// routeOf is the route template a request path matches ("(none)" for a
// 404 path).
func routeOf(p string) string {
	p, _, _ = strings.Cut(p, "?")
	segs := strings.Split(p, "/")
	for _, r := range upstreamRoutes {
		rs := strings.Split(r, "/")
		if len(rs) != len(segs) {
			continue
		}
		ok := true
		for i := range rs {
			if strings.HasPrefix(rs[i], "{") {
				ok = segs[i] != ""
			} else {
				ok = rs[i] == segs[i]
			}
			if !ok {
				break
			}
		}
		if ok {
			return r
		}
	}
	return "(none)"
}

// unorderedPaths says, per route, where the order of an answer's object
// keys or array elements is undefined upstream (it comes from SQL without
// ORDER BY, or from Python set iteration), so that only the contents are
// compared there. Paths are dotted; "*" stands for any key or index.
// Everywhere else the order must be the same.
var unorderedPaths = map[string][]string{
	// Standard traits are inserted at startup from a Python set: their
	// order changes with the hash seed.
	"GET /traits": {"traits"},
}

// unorderedFor returns the test for a route's unordered paths.
func unorderedFor(method, route string) func(string) bool {
	pats := unorderedPaths[method+" "+route]
	return func(p string) bool {
		for _, pat := range pats {
			if ok, _ := path.Match(strings.ReplaceAll(pat, ".", "/"), strings.ReplaceAll(p, ".", "/")); ok {
				return true
			}
		}
		return false
	}
}

// Headers that legitimately differ and are not compared at all: the
// transport's (HTTP/1.0 wsgiref against Go's HTTP/1.1 server) and
// placementd's own (docs/api-compat.md).
var ignoredHeaders = map[string]bool{
	"Date": true, "Server": true, "Content-Length": true, "Transfer-Encoding": true,
	"Connection": true, "Keep-Alive": true, "X-Placementd-Served-By": true,
}

// Headers whose presence is compared but not their value: request ids and
// timestamps differ by nature.
var presenceHeaders = map[string]bool{
	"X-Openstack-Request-Id": true, "Last-Modified": true,
}

var (
	requestIDRE = regexp.MustCompile(`req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	uuidRE      = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
)

// normalize rewrites what legitimately differs between the targets'
// answers: request ids become one placeholder, absolute URLs lose the
// target's address, each target's generated uuids become their references,
// and the uuids it made up that no request named and no step learned
// (the uuid of a provider whose creation failed, in its error) are
// numbered in order of appearance.
func (se *session) normalize(s string) string {
	s = strings.ReplaceAll(s, "http://"+se.target.Addr, "")
	s = requestIDRE.ReplaceAllString(s, "req-<id>")
	for ref, u := range se.generated {
		s = strings.ReplaceAll(s, u, "<"+ref+">")
	}
	made := map[string]string{}
	return uuidRE.ReplaceAllStringFunc(s, func(u string) string {
		if se.named[strings.ToLower(u)] {
			return u
		}
		if made[u] == "" {
			made[u] = fmt.Sprintf("<made-up uuid %d>", len(made)+1)
		}
		return made[u]
	})
}

// Divergence is one request both targets answered differently.
type Divergence struct {
	Step    int
	Request *Request
	Route   string
	// Kind is "status", "header <Name>", "body" or "format"; with the
	// route and the statuses it makes the signature divergences are
	// grouped and shrunk by.
	Kind   string
	Detail string
	// The two answers, normalized.
	Upstream, Placementd string
}

// Signature groups divergences with one likely cause.
func (d *Divergence) Signature() string {
	return fmt.Sprintf("%s %s: %s", d.Request.Method, d.Route, d.Kind)
}

// compare returns how placementd's answer differs from upstream's, or
// nil.
func compare(req *Request, up, pd *Response, upS, pdS *session) *Divergence {
	route := routeOf(req.Path)
	d := &Divergence{Request: req, Route: route,
		Upstream: showResponse(up, upS), Placementd: showResponse(pd, pdS)}
	if up.Status != pd.Status {
		d.Kind, d.Detail = "status", fmt.Sprintf("upstream %d, placementd %d", up.Status, pd.Status)
		return d
	}
	if name, detail := compareHeaders(up.Header, pd.Header, upS, pdS); name != "" {
		d.Kind, d.Detail = "header "+name, detail
		return d
	}
	ub, pb := upS.normalize(string(up.Body)), pdS.normalize(string(pd.Body))
	if ub == pb {
		return nil
	}
	un, err1 := parseJSON([]byte(ub))
	pn, err2 := parseJSON([]byte(pb))
	if err1 != nil || err2 != nil {
		d.Kind, d.Detail = "body", fmt.Sprintf("upstream %q\nplacementd %q", truncate(ub, 2000), truncate(pb, 2000))
		return d
	}
	// Where upstream's order is undefined the bytes may differ, but they
	// must still be json.dumps' bytes.
	if pn.String() != pb {
		d.Kind, d.Detail = "format", fmt.Sprintf("placementd %q is not json.dumps' %q", truncate(pb, 500), truncate(pn.String(), 500))
		return d
	}
	if req.Method == "GET" && route == "/traits" {
		dropNewerTraits(pn, pdS.newerTraits)
	}
	if detail := diff("", un, pn, unorderedFor(req.Method, route)); detail != "" {
		d.Kind, d.Detail = "body", detail
		return d
	}
	return nil
}

// dropNewerTraits removes from a GET /traits answer the standard traits
// only placementd knows: it carries a newer os-traits than Debian's
// upstream (docs/api-compat.md).
func dropNewerTraits(n *jnode, newer map[string]bool) {
	if n.kind != '{' || len(newer) == 0 {
		return
	}
	for i, k := range n.keys {
		if k != "traits" || n.kids[i].kind != '[' {
			continue
		}
		var keep []*jnode
		for _, t := range n.kids[i].kids {
			if !newer[t.text] {
				keep = append(keep, t)
			}
		}
		n.kids[i].kids = keep
	}
}

// compareHeaders returns the first header that differs.
func compareHeaders(a, b http.Header, aS, bS *session) (string, string) {
	names := map[string]bool{}
	for k := range a {
		names[k] = true
	}
	for k := range b {
		names[k] = true
	}
	var sorted []string
	for k := range names {
		if !ignoredHeaders[k] {
			sorted = append(sorted, k)
		}
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		av, aok := a[k]
		bv, bok := b[k]
		if aok != bok {
			return k, fmt.Sprintf("upstream %q, placementd %q", av, bv)
		}
		if presenceHeaders[k] {
			continue
		}
		as, bs := aS.normalize(strings.Join(av, ", ")), bS.normalize(strings.Join(bv, ", "))
		if as != bs {
			return k, fmt.Sprintf("upstream %q, placementd %q", as, bs)
		}
	}
	return "", ""
}

// showResponse is a normalized answer for a report.
func showResponse(r *Response, se *session) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", r.Status)
	var names []string
	for k := range r.Header {
		if !ignoredHeaders[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, "\n    %s: %s", k, se.normalize(strings.Join(r.Header[k], ", ")))
	}
	if len(r.Body) > 0 {
		fmt.Fprintf(&b, "\n    %s", truncate(se.normalize(string(r.Body)), 3000))
	}
	return b.String()
}
