package httpapi

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/placementd/placementd/fsm/candidates"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi/schema"
)

// The query schemas of GET /allocation_candidates, as upstream builds them
// by copying and changing the previous version's (which fixes the key
// order, and so the wording of errors).
const (
	acLimitSchema     = `"limit": {"type": ["integer", "string"], "pattern": "^[1-9][0-9]*$", "minimum": 1, "minLength": 1}`
	acPolicySchema    = `"group_policy": {"type": "string", "enum": ["none", "isolate"]}`
	acGroupPattern    = `([1-9][0-9]*)?$`
	acGroupPattern133 = `([a-zA-Z0-9_-]{1,64})?$`
)

func acPatterns(suffix string, prefixes ...string) string {
	var parts []string
	for _, p := range prefixes {
		parts = append(parts, `"^`+p+suffix+`": {"type": "string"}`)
	}
	return strings.Join(parts, ", ")
}

func acGranularSchema(props, patterns string) *schema.Schema {
	return schema.MustCompile(`{"type": "object", "properties": {` + acLimitSchema + `, ` + acPolicySchema + props +
		`}, "additionalProperties": false, "patternProperties": {` + patterns + `}}`)
}

var (
	acSchema110 = schema.MustCompile(`{"type": "object", "properties": {"resources": {"type": "string"}},
		"required": ["resources"], "additionalProperties": false}`)
	acSchema116 = schema.MustCompile(`{"type": "object", "properties": {"resources": {"type": "string"}, ` + acLimitSchema + `},
		"required": ["resources"], "additionalProperties": false}`)
	acSchema117 = schema.MustCompile(`{"type": "object", "properties": {"resources": {"type": "string"}, ` + acLimitSchema + `,
		"required": {"type": ["string"]}}, "required": ["resources"], "additionalProperties": false}`)
	acSchema121 = schema.MustCompile(`{"type": "object", "properties": {"resources": {"type": "string"}, ` + acLimitSchema + `,
		"required": {"type": ["string"]}, "member_of": {"type": ["string"]}}, "required": ["resources"], "additionalProperties": false}`)
	acSchema125 = acGranularSchema(``, acPatterns(acGroupPattern, "resources", "required", "member_of"))
	acSchema131 = acGranularSchema(``, acPatterns(acGroupPattern, "resources", "required", "member_of", "in_tree"))
	acSchema133 = acGranularSchema(``, acPatterns(acGroupPattern133, "resources", "required", "member_of", "in_tree"))
	acSchema135 = acGranularSchema(`, "root_required": {"type": ["string"]}`,
		acPatterns(acGroupPattern133, "resources", "required", "member_of", "in_tree"))
	acSchema136 = acGranularSchema(`, "root_required": {"type": ["string"]}, "same_subtree": {"type": ["string"]}`,
		acPatterns(acGroupPattern133, "resources", "required", "member_of", "in_tree"))
)

// Request group keys: resources, required, member_of and in_tree with an
// optional suffix (a number before 1.33, a name from 1.33).
var (
	acGroupKey    = regexp.MustCompile(`^(resources|required|member_of|in_tree)` + acGroupPattern)
	acGroupKey133 = regexp.MustCompile(`^(resources|required|member_of|in_tree)` + acGroupPattern133)
)

// acError is a 400 answer's detail and Placement error code.
type acError struct{ detail, code string }

func acBad(detail string) *acError { return &acError{detail: detail} }

// pyList renders strings as Python's repr of a list of str.
func pyList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = "'" + s + "'"
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// parseCandidateRequest is upstream's RequestWideParams.from_request and
// RequestGroup.dict_from_request, with their checks in their order.
func parseCandidateRequest(r *http.Request) (*candidates.Request, *acError) {
	v := versionOf(r)
	req := &candidates.Request{NestedAware: v.AtLeast(29)}

	// Request-wide parameters. Only the first limit and group_policy count.
	if vals := queryValues(r, "limit"); len(vals) > 0 {
		n, err := strconv.Atoi(pyStrip(vals[0]))
		if err != nil || n < 1 {
			return nil, acBad("Invalid query string parameters: invalid limit " + vals[0])
		}
		req.Limit = n
	}
	policy := ""
	if vals := queryValues(r, "group_policy"); len(vals) > 0 {
		policy = vals[0]
	}
	req.Isolate = policy == "isolate"
	if vals := queryValues(r, "root_required"); len(vals) > 0 {
		if e := parseRootRequired(vals, req); e != nil {
			return nil, e
		}
	}
	var subtreeSuffixes uniqueStrings
	for _, val := range queryValues(r, "same_subtree") {
		var set uniqueStrings
		for _, s := range strings.Split(val, ",") {
			set.add(pyStrip(s))
		}
		if set.has("") {
			return nil, &acError{"Empty string (unsuffixed group) can not be specified in `same_subtree` ", state.CodeQueryBadValue}
		}
		req.SameSubtrees = append(req.SameSubtrees, set.list)
		subtreeSuffixes.add(set.list...)
	}

	// Request groups, in the order their first key appears. (The list is
	// built here, not by a helper returning it: it then stays on the
	// stack.)
	keyRE := acGroupKey
	if v.AtLeast(33) {
		keyRE = acGroupKey133
	}
	var groups []*candidates.Group
	bySuffix := map[string]*candidates.Group{}
	// Upstream normalizes every value of required<S> and member_of<S> at
	// each of their occurrences, to the same result: once is enough.
	normalized := map[string]bool{}
	for _, p := range queryPairs(r) {
		m := keyRE.FindStringSubmatch(p.Key)
		if m == nil {
			continue
		}
		prefix, suffix := m[1], m[2]
		g := bySuffix[suffix]
		if g == nil {
			g = &candidates.Group{Suffix: suffix}
			bySuffix[suffix] = g
			groups = append(groups, g)
		}
		if (prefix == "required" || prefix == "member_of") && normalized[p.Key] {
			continue
		}
		normalized[p.Key] = true
		if detail := parseGroupValue(r, g, prefix, suffix, p.Value); detail != "" {
			return nil, acBad(detail)
		}
	}

	var e *acError
	if v.AtLeast(36) {
		e = checkSubtreeGroups(groups, bySuffix, subtreeSuffixes)
	} else {
		e = checkOrphanGroups(groups)
	}
	if e != nil {
		return nil, e
	}
	if v.AtLeast(22) {
		if e := checkTraitConflicts(groups); e != nil {
			return nil, e
		}
	}

	granular := 0
	for _, g := range groups {
		if g.Suffix != "" {
			granular++
		}
	}
	if policy == "" && granular > 1 {
		return nil, acBad(`The "group_policy" parameter is required when specifying more than one "resources{N}" parameter.`)
	}
	for _, g := range groups {
		req.Groups = append(req.Groups, *g)
	}
	return req, nil
}

// parseRootRequired reads root_required (1.35+), which may be given once.
func parseRootRequired(vals []string, req *candidates.Request) *acError {
	if len(vals) > 1 {
		return &acError{"Query parameter 'root_required' may be specified only once.", state.CodeQueryDuplicateKey}
	}
	required, forbidden, detail := normalizeTraitsValue(vals[0], true, false)
	if detail != "" {
		return acBad(detail)
	}
	var rootRequired uniqueStrings
	for _, anyOf := range required {
		rootRequired.add(anyOf...)
	}
	req.RootRequired = rootRequired.list
	req.RootForbidden = forbidden
	var conflicts []string
	for _, t := range forbidden {
		if rootRequired.has(t) {
			conflicts = append(conflicts, t)
		}
	}
	if len(conflicts) > 0 {
		return &acError{"Conflicting required and forbidden traits found in root_required: " +
			strings.Join(conflicts, ", "), state.CodeQueryBadValue}
	}
	return nil
}

// parseGroupValue reads one value of a request group's key (prefix is
// resources, required, member_of or in_tree) into g, or explains why it
// is bad.
func parseGroupValue(r *http.Request, g *candidates.Group, prefix, suffix, value string) (detail string) {
	switch prefix {
	case "resources":
		g.Resources, detail = normalizeResources(value)
	case "required":
		g.Required, g.Forbidden, detail = normalizeRequiredTraits(r, suffix)
	case "member_of":
		g.MemberOf, g.ForbiddenAggs, detail = normalizeMemberOf(r, suffix)
	case "in_tree":
		g.InTree = pyStrip(value)
		if schema.UUIDLikeHex(g.InTree) == "" {
			detail = "Invalid query string parameters: Expected 'in_tree' parameter to be a format of uuid. Got: " + value
		}
	}
	return detail
}

// checkSubtreeGroups is upstream's check from 1.36: some group has
// resources, a group without is named in same_subtree, and same_subtree
// names only groups of the request.
func checkSubtreeGroups(groups []*candidates.Group, bySuffix map[string]*candidates.Group, subtreeSuffixes uniqueStrings) *acError {
	var resourceless []string
	for _, g := range groups {
		if len(g.Resources) == 0 {
			resourceless = append(resourceless, g.Suffix)
		}
	}
	if len(resourceless) == len(groups) {
		return &acError{"There must be at least one resources or resources[$S] parameter.", state.CodeQueryMissingValue}
	}
	var bad []string
	for _, s := range resourceless {
		if !subtreeSuffixes.has(s) {
			bad = append(bad, s)
		}
	}
	if len(bad) > 0 {
		return &acError{"Resourceless suffixed group request should be specified in `same_subtree` query param: bad group(s) - " +
			pyList(bad) + ".", state.CodeQueryBadValue}
	}
	bad = nil
	for _, s := range subtreeSuffixes.list {
		if bySuffix[s] == nil {
			bad = append(bad, s)
		}
	}
	if len(bad) > 0 {
		var all []string
		for _, g := range groups {
			all = append(all, g.Suffix)
		}
		return &acError{fmt.Sprintf("Real suffixes should be specified in `same_subtree`: %s not found in %s.",
			pyList(bad), pyList(all)), state.CodeQueryBadValue}
	}
	return nil
}

// checkTraitConflicts is upstream's check from 1.22: no group requires
// only traits it also forbids.
func checkTraitConflicts(groups []*candidates.Group) *acError {
	var conflicts []string
	for _, g := range groups {
		var forbidden uniqueStrings
		forbidden.add(g.Forbidden...)
		for _, anyOf := range g.Required {
			all := true
			for _, t := range anyOf {
				all = all && forbidden.has(t)
			}
			if all {
				sorted := append([]string(nil), anyOf...)
				sort.Strings(sorted)
				conflicts = append(conflicts, "required"+g.Suffix+": ("+strings.Join(sorted, ", ")+")")
			}
		}
	}
	if len(conflicts) > 0 {
		sort.Strings(conflicts)
		return acBad("Conflicting required and forbidden traits found in the following traits keys: " +
			strings.Join(conflicts, ", "))
	}
	return nil
}

// checkOrphanGroups is upstream's check before 1.36: every group needs
// resources.
func checkOrphanGroups(groups []*candidates.Group) *acError {
	var orphans []string
	for _, g := range groups {
		if len(g.Required) > 0 && len(g.Resources) == 0 {
			orphans = append(orphans, "required"+g.Suffix)
		}
	}
	if len(orphans) > 0 {
		return acBad("All traits parameters must be associated with resources.  Found the following orphaned traits keys: " +
			strings.Join(orphans, ", "))
	}
	for _, g := range groups {
		if len(g.Resources) == 0 && (len(g.MemberOf) > 0 || len(g.ForbiddenAggs) > 0) {
			orphans = append(orphans, "member_of"+g.Suffix)
		}
	}
	if len(orphans) > 0 {
		return acBad("All member_of parameters must be associated with resources. Found the following orphaned member_of keys: " +
			strings.Join(orphans, ", "))
	}
	for _, g := range groups {
		if len(g.Resources) == 0 {
			return acBad("All request groups must specify resources.")
		}
	}
	if len(groups) == 0 {
		return acBad("At least one request group (`resources` or `resources{$S}`) is required.")
	}
	return nil
}

// candidateOptions are the search settings from the configuration.
func (s *Server) candidateOptions() candidates.Options {
	opt := candidates.Options{
		Randomize:     s.cfg.RandomizeAllocationCandidates,
		MaxCandidates: s.cfg.MaxAllocationCandidates,
		MaxBytes:      s.cfg.CandidatesMaxBytes,
	}
	// A search alone may take the whole of MaxAnswerBytes, no more: past
	// it, it is too large (503 placement.query.too_large), not busy.
	if b := s.cfg.MaxAnswerBytes; b > 0 && (opt.MaxBytes <= 0 || opt.MaxBytes > b) {
		opt.MaxBytes = b
	}
	if s.cfg.AllocationCandidatesStrategy == "breadth-first" {
		opt.Strategy = candidates.BreadthFirst
	}
	return opt
}

func (s *Server) listAllocationCandidates(w http.ResponseWriter, r *http.Request) {
	if !validateRouteQuery(w, r) {
		return
	}
	req, perr := parseCandidateRequest(r)
	if perr != nil {
		writeError(w, r, http.StatusBadRequest, perr.detail, perr.code)
		return
	}
	release, ok := s.admit(w, r, s.searchSlots, AdmitSearch, 1)
	if !ok {
		return
	}
	defer release() // twice is harmless: the slot goes back before the answer is written
	st, ok := s.version(w, r)
	if !ok {
		return
	}
	// The search's memory, and then its answer's until it is sent, come
	// out of Config.MaxAnswerBytes: the first share is waited for (as a
	// slot is), the rest taken as the search grows (candidates.Budget).
	if !s.admitted(w, r, AdmitAnswer, s.answerBytes.Take(r.Context(), candidates.BudgetChunk)) {
		return
	}
	opt := s.candidateOptions()
	opt.Budget, opt.Taken = s.answerBytes, candidates.BudgetChunk
	searched := s.candidatesTimer()
	res, err := candidates.Search(r.Context(), st, req, opt)
	if err != nil && s.aborted(w, r, err) {
		return
	}
	if err != nil {
		detail := err.Error()
		if ne, ok := err.(*candidates.NameError); ok && ne.Class {
			detail = "Invalid resource class in resources parameter: " + detail
		}
		writeError(w, r, http.StatusBadRequest, detail, "")
		return
	}
	searched(res)
	setLastModified(w, r, zeroTime)
	buf := responseBuffers.Get().(*[]byte)
	body := candidatesJSON((*buf)[:0], versionOf(r), req, res)
	// The answer is rendered: what remains is writing it. The search's
	// memory goes back for the next searches, and of its share of the
	// budget only the answer's bytes stay held until they are written
	// (or the client is gone: a client that does not read is cut at the
	// server's write timeout).
	taken := res.Taken
	res.Release()
	release()
	if size := int64(cap(body)); size < taken {
		s.answerBytes.Give(taken - size)
		taken = size
	}
	defer s.answerBytes.Give(taken)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	// Answers of a few hundred kilobytes are common; keeping their buffers
	// spares the allocation and the garbage collector's work on every
	// request. Larger ones are left to the collector: a pool of buffers
	// of several MiB, one per handler that rendered one, held hundreds of
	// MiB under 100 clients that never read their answers.
	if cap(body) <= 1<<20 {
		*buf = body
		responseBuffers.Put(buf)
	}
}

// responseBuffers holds byte slices to render answers into.
var responseBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// candidatesJSON appends the result to b in the shape of microversion v. It
// writes the JSON directly (answers can hold thousands of candidates):
// providers in first-use order, mappings in group order, summaries in
// provider order.
func candidatesJSON(b []byte, v Version, req *candidates.Request, res *candidates.Result) []byte {
	b = append(b, `{"allocation_requests": [`...)
	for i, c := range res.Candidates {
		if i > 0 {
			b = append(b, ", "...)
		}
		if v.AtLeast(12) {
			b = append(b, `{"allocations": {`...)
			for j, a := range c.Allocations {
				if j > 0 {
					b = append(b, ", "...)
				}
				b = appendPyString(b, a.Provider)
				b = append(b, `: {"resources": `...)
				b = appendAmounts(b, a.Resources)
				b = append(b, '}')
			}
			b = append(b, '}')
			if v.AtLeast(34) {
				b = append(b, `, "mappings": {`...)
				for j, m := range c.Mappings {
					if j > 0 {
						b = append(b, ", "...)
					}
					b = appendPyString(b, m.Suffix)
					b = append(b, ": "...)
					b = appendStrings(b, m.Providers)
				}
				b = append(b, '}')
			}
			b = append(b, '}')
			continue
		}
		b = append(b, `{"allocations": [`...)
		for j, a := range c.Allocations {
			if j > 0 {
				b = append(b, ", "...)
			}
			b = append(b, `{"resource_provider": {"uuid": `...)
			b = appendPyString(b, a.Provider)
			b = append(b, `}, "resources": `...)
			b = appendAmounts(b, a.Resources)
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	b = append(b, `], "provider_summaries": {`...)
	// Before 1.27 summaries show only the requested classes.
	requested := map[string]bool{}
	for _, g := range req.Groups {
		for _, r := range g.Resources {
			requested[r.Class] = true
		}
	}
	for i, sum := range res.Summaries {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendPyString(b, sum.UUID)
		b = append(b, `: {"resources": {`...)
		n := 0
		for _, r := range sum.Resources {
			if !v.AtLeast(27) && !requested[r.Class] {
				continue
			}
			if n > 0 {
				b = append(b, ", "...)
			}
			n++
			b = appendPyString(b, r.Class)
			b = append(b, `: {"capacity": `...)
			b = strconv.AppendInt(b, r.Capacity, 10)
			b = append(b, `, "used": `...)
			b = strconv.AppendInt(b, r.Used, 10)
			b = append(b, '}')
		}
		b = append(b, '}')
		if v.AtLeast(17) {
			b = append(b, `, "traits": `...)
			b = appendStrings(b, sum.Traits)
		}
		if v.AtLeast(29) {
			b = append(b, `, "parent_provider_uuid": `...)
			if sum.ParentUUID == "" {
				b = append(b, "null"...)
			} else {
				b = appendPyString(b, sum.ParentUUID)
			}
			b = append(b, `, "root_provider_uuid": `...)
			b = appendPyString(b, sum.RootUUID)
		}
		b = append(b, '}')
	}
	return append(b, "}}"...)
}

func appendAmounts(b []byte, rs []state.ResourceAmount) []byte {
	b = append(b, '{')
	for i, r := range rs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendPyString(b, r.Class)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, r.Amount, 10)
	}
	return append(b, '}')
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendPyString(b, s)
	}
	return append(b, ']')
}
