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
	// A provider's aggregates come from a query over a Python set.
	"GET /resource_providers/{uuid}/aggregates": {"aggregates"},
	// Allocation requests come out of a Python set of objects whose
	// hashes include strings, and their mappings' providers out of Python
	// sets of uuids: their order changes with the hash seed.
	"GET /allocation_candidates": {"allocation_requests", "allocation_requests.*.mappings.*"},
}

// pySetMessages are error messages that list the members of a Python set
// of strings, whose order changes with upstream's hash seed; the list
// (the first group) is compared sorted.
var pySetMessages = []*regexp.Regexp{
	regexp.MustCompile(`on resource provider (?:'|&#x27;)(.*?)(?:'|&#x27;) invalid`),
	regexp.MustCompile(`No such trait ([A-Za-z0-9_]+(?:, [A-Za-z0-9_]+)+)`),
	regexp.MustCompile("`same_subtree`: \\[([^\\]]*)\\] not found"),
}

// sortSetMessages sorts the set members of pySetMessages in s.
func sortSetMessages(s string) string {
	for _, re := range pySetMessages {
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			g := re.FindStringSubmatchIndex(m)
			parts := strings.Split(m[g[2]:g[3]], ", ")
			sort.Strings(parts)
			return m[:g[2]] + strings.Join(parts, ", ") + m[g[3]:]
		})
	}
	return s
}

// limitedCandidates reduces an allocation candidates answer cut by a
// limit to its number of allocation requests: which ones upstream keeps
// is the first ones of its hash-seeded order.
func limitedCandidates(req *Request, n *jnode) {
	if !strings.Contains(req.Path, "limit=") || n.kind != '{' {
		return
	}
	for i, k := range n.keys {
		if k == "allocation_requests" && n.kids[i].kind == '[' {
			n.kids[i] = &jnode{kind: '0', text: fmt.Sprint(len(n.kids[i].kids))}
		}
		if k == "provider_summaries" {
			n.kids[i] = &jnode{kind: 'l', text: "null"}
		}
	}
}

// traitLists are the answers' lists of trait names in upstream's trait id
// order. Standard traits are inserted at upstream's startup from a Python
// set (their order changes with the hash seed) and before any custom
// trait, which come in creation order: such a list is compared with its
// standard traits as a set, first, then its custom traits in order.
var traitLists = map[string][]string{
	"GET /traits":                           {"traits"},
	"GET /resource_providers/{uuid}/traits": {"traits"},
	"GET /allocation_candidates":            {"provider_summaries.*.traits"},
}

// matchesAny reports whether a dotted path matches one of the patterns
// ("*" for any key or index).
func matchesAny(pats []string, p string) bool {
	for _, pat := range pats {
		if ok, _ := path.Match(strings.ReplaceAll(pat, ".", "/"), strings.ReplaceAll(p, ".", "/")); ok {
			return true
		}
	}
	return false
}

// sortStandardTraits rewrites, in a trait list, the standard traits
// (those not CUSTOM_) as a sorted block ahead of the custom ones, which
// keep their order.
func sortStandardTraits(n *jnode, pats []string, at string) {
	switch n.kind {
	case '{':
		for i, k := range n.keys {
			sortStandardTraits(n.kids[i], pats, join(at, k))
		}
	case '[':
		if !matchesAny(pats, at) {
			for _, k := range n.kids {
				sortStandardTraits(k, pats, join(at, "*"))
			}
			return
		}
		var std, custom []*jnode
		for _, k := range n.kids {
			if strings.HasPrefix(k.text, "CUSTOM_") {
				custom = append(custom, k)
			} else {
				std = append(std, k)
			}
		}
		sort.SliceStable(std, func(i, j int) bool { return std[i].text < std[j].text })
		n.kids = append(std, custom...)
	}
}

// unorderedFor returns the test for a route's unordered paths.
func unorderedFor(method, route string) func(string) bool {
	pats := unorderedPaths[method+" "+route]
	return func(p string) bool { return matchesAny(pats, p) }
}

// Headers that legitimately differ and are not compared at all: the
// transport's (HTTP/1.0 wsgiref against Go's HTTP/1.1 server), and
// placementd's own, X-Placementd-* (docs/api-compat.md), see ignored.
var ignoredHeaders = map[string]bool{
	"Date": true, "Server": true, "Content-Length": true, "Transfer-Encoding": true,
	"Connection": true, "Keep-Alive": true,
}

func ignored(header string) bool {
	return ignoredHeaders[header] || strings.HasPrefix(header, "X-Placementd-")
}

// Headers whose presence is compared but not their value: request ids and
// timestamps differ by nature.
var presenceHeaders = map[string]bool{
	"X-Openstack-Request-Id": true, "Last-Modified": true,
}

// goSpeakRE finds Go's own error words in an answer.
var goSpeakRE = regexp.MustCompile(`Go value|json: cannot|json: unknown|unexpected end of JSON|invalid character`)

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
	// route it makes the signature divergences are grouped and shrunk by.
	Kind   string
	Detail string
	// Deliberate marks a difference docs/api-compat.md explains (an
	// upstream 500 where placementd answers 4xx, upstream's database
	// error text): reported, not counted.
	Deliberate bool
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
	if up.Status >= 500 && pd.Status >= 400 && pd.Status < 500 {
		d.Kind, d.Deliberate = "upstream error", true
		d.Detail = fmt.Sprintf("upstream %d, placementd %d: placementd answers every bad input with a 4xx", up.Status, pd.Status)
		if goSpeakRE.Match(pd.Body) {
			// The 4xx must still be clear: not Go's own words.
			d.Kind, d.Deliberate = "unclear 4xx", false
			d.Detail = fmt.Sprintf("upstream %d, placementd %d in Go's words: %s", up.Status, pd.Status, truncate(string(pd.Body), 500))
		}
		return d
	}
	if up.Status != pd.Status {
		d.Kind, d.Detail = "status", fmt.Sprintf("upstream %d, placementd %d", up.Status, pd.Status)
		return d
	}
	if name, detail := compareHeaders(up.Header, pd.Header, upS, pdS); name != "" {
		d.Kind, d.Detail = "header "+name, detail
		return d
	}
	ub, pb := sortSetMessages(upS.normalize(string(up.Body))), sortSetMessages(pdS.normalize(string(pd.Body)))
	if ub == pb {
		return nil
	}
	if strings.Contains(ub, "(sqlite3.") {
		// Upstream passes its database's own error text on.
		d.Kind, d.Detail, d.Deliberate = "database error text", truncate(ub, 300), true
		return d
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
	if req.Method == "GET" && route == "/allocation_candidates" {
		limitedCandidates(req, un)
		limitedCandidates(req, pn)
	}
	if pats := traitLists[req.Method+" "+route]; pats != nil {
		sortStandardTraits(un, pats, "")
		sortStandardTraits(pn, pats, "")
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
		if !ignored(k) {
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
		if !ignored(k) {
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
