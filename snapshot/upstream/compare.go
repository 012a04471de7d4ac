package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/snapshot/export"
)

// Request is one GET to compare: a path with its query, at a microversion.
type Request struct {
	Path    string
	Version string
}

func (r Request) String() string { return "GET " + r.Path + " @" + r.Version }

// Difference is a request two endpoints answer differently.
type Difference struct {
	Request
	// Detail says where the answers part: status codes, or the first
	// JSON paths whose values differ.
	Detail string
}

func (d Difference) String() string { return d.Request.String() + ": " + d.Detail }

// Requests lists the GETs that show every resource of a document at the
// microversion: the listings, each resource class, trait and provider
// with its inventories (each one too), usages, aggregates, traits and
// allocations, each consumer's allocations, each project's (and project
// and user's) usages, and the providers of each aggregate and tree.
func Requests(d *export.Document, version string) []Request {
	var out []Request
	add := func(format string, args ...any) {
		out = append(out, Request{Path: fmt.Sprintf(format, args...), Version: version})
	}
	add("/")
	add("/resource_classes")
	add("/traits")
	add("/resource_providers")
	for _, rc := range d.ResourceClasses {
		add("/resource_classes/%s", escape(rc.Name))
	}
	for _, t := range d.Traits {
		add("/traits/%s", escape(t.Name))
	}
	aggs, roots := map[string]bool{}, map[string]bool{}
	for _, rp := range d.ResourceProviders {
		base := "/resource_providers/" + escape(rp.UUID)
		add("%s", base)
		for _, sub := range []string{"inventories", "usages", "aggregates", "traits", "allocations"} {
			add("%s/%s", base, sub)
		}
		for _, class := range state.SortedKeys(rp.Inventories) {
			add("%s/inventories/%s", base, escape(class))
		}
		for _, a := range rp.Aggregates {
			aggs[a] = true
		}
		if rp.ParentProviderUUID == "" {
			roots[rp.UUID] = true
		}
	}
	for _, a := range state.SortedKeys(aggs) {
		add("/resource_providers?member_of=%s", a)
	}
	for _, r := range state.SortedKeys(roots) {
		add("/resource_providers?in_tree=%s", r)
	}
	projects, users := map[string]bool{}, map[string]bool{}
	for _, c := range d.Consumers {
		add("/allocations/%s", escape(c.UUID))
		projects[c.ProjectID] = true
		users[c.ProjectID+"\x00"+c.UserID] = true
	}
	for _, p := range state.SortedKeys(projects) {
		add("/usages?project_id=%s", url.QueryEscape(p))
	}
	for _, pu := range state.SortedKeys(users) {
		p, u, _ := strings.Cut(pu, "\x00")
		add("/usages?project_id=%s&user_id=%s", url.QueryEscape(p), url.QueryEscape(u))
	}
	return out
}

// Compare sends every request to both endpoints and lists the differences
// in request order. Only the status code and the JSON body are compared,
// after Normalize: headers (Last-Modified, request ids) are not.
func Compare(ctx context.Context, a, b *Endpoint, reqs []Request, workers int) ([]Difference, error) {
	diffs := make([]*Difference, len(reqs))
	err := forEach(ctx, len(reqs), workers, func(ctx context.Context, i int) error {
		ra, err := a.Get(ctx, reqs[i].Path, reqs[i].Version)
		if err != nil {
			return err
		}
		rb, err := b.Get(ctx, reqs[i].Path, reqs[i].Version)
		if err != nil {
			return err
		}
		if detail := compareResponses(reqs[i].Path, ra, rb, pathPrefix(a.URL), pathPrefix(b.URL)); detail != "" {
			diffs[i] = &Difference{Request: reqs[i], Detail: detail}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Difference
	for _, d := range diffs {
		if d != nil {
			out = append(out, *d)
		}
	}
	return out, nil
}

func pathPrefix(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(p.Path, "/")
}

func compareResponses(path string, a, b *Response, prefixA, prefixB string) string {
	if a.Status != b.Status {
		return fmt.Sprintf("status %d, the copy %d (%s | %s)", a.Status, b.Status, clip(a.Body), clip(b.Body))
	}
	if len(bytes.TrimSpace(a.Body)) == 0 && len(bytes.TrimSpace(b.Body)) == 0 {
		return ""
	}
	va, errA := Normalize(a.Body, prefixA)
	vb, errB := Normalize(b.Body, prefixB)
	if errA != nil || errB != nil {
		if !bytes.Equal(a.Body, b.Body) {
			return fmt.Sprintf("bodies differ (%s | %s)", clip(a.Body), clip(b.Body))
		}
		return ""
	}
	dropNewerStandards(path, va, vb)
	var diffs []string
	diffValues("$", va, vb, &diffs)
	if len(diffs) == 0 {
		return ""
	}
	if len(diffs) > 5 {
		diffs = append(diffs[:5], fmt.Sprintf("and %d more", len(diffs)-5))
	}
	return strings.Join(diffs, "; ")
}

// dropNewerStandards removes from b's listing of traits or resource
// classes the standard ones a lacks: placementd's os-traits and
// os-resource-classes lists may be newer than the source's (a documented
// difference).
func dropNewerStandards(path string, a, b any) {
	base, _, _ := strings.Cut(path, "?")
	var key string
	var standard []string
	switch base {
	case "/traits":
		key, standard = "traits", state.StandardTraits
	case "/resource_classes":
		key, standard = "resource_classes", state.StandardResourceClasses
	default:
		return
	}
	ma, okA := a.(map[string]any)
	mb, okB := b.(map[string]any)
	if !okA || !okB {
		return
	}
	la, _ := ma[key].([]any)
	lb, okB := mb[key].([]any)
	if !okB {
		return
	}
	name := func(v any) string {
		if m, ok := v.(map[string]any); ok {
			v = m["name"]
		}
		s, _ := v.(string)
		return s
	}
	inA := map[string]bool{}
	for _, v := range la {
		inA[name(v)] = true
	}
	isStandard := map[string]bool{}
	for _, n := range standard {
		isStandard[n] = true
	}
	kept := lb[:0]
	for _, v := range lb {
		if n := name(v); inA[n] || !isStandard[n] {
			kept = append(kept, v)
		}
	}
	mb[key] = kept
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// Normalize decodes a JSON body into the form Compare compares: lists are
// sorted (Placement documents no order for any of them), error bodies
// lose their request ids, and link hrefs lose the deployment's URL path
// prefix (e.g. /placement).
func Normalize(body []byte, prefix string) (any, error) {
	// Numbers decode as float64: 1.0 and 1 are the same number.
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, err
	}
	return normalizeValue(v, prefix), nil
}

func normalizeValue(v any, prefix string) any {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "request_id")
		for k, e := range x {
			if s, ok := e.(string); ok && k == "href" && prefix != "" {
				x[k] = strings.TrimPrefix(s, prefix)
				continue
			}
			x[k] = normalizeValue(e, prefix)
		}
		return x
	case []any:
		for i := range x {
			x[i] = normalizeValue(x[i], prefix)
		}
		sort.SliceStable(x, func(i, j int) bool { return canonical(x[i]) < canonical(x[j]) })
		return x
	}
	return v
}

func canonical(v any) string {
	b, _ := json.Marshal(v) // maps encode with sorted keys
	return string(b)
}

// diffValues lists the JSON paths where a and b differ.
func diffValues(path string, a, b any, out *[]string) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range x {
			keys[k] = true
		}
		for k := range y {
			keys[k] = true
		}
		for _, k := range state.SortedKeys(keys) {
			ea, inA := x[k]
			eb, inB := y[k]
			switch {
			case !inA:
				*out = append(*out, fmt.Sprintf("%s.%s only in the copy: %s", path, k, clip([]byte(canonical(eb)))))
			case !inB:
				*out = append(*out, fmt.Sprintf("%s.%s missing from the copy (%s)", path, k, clip([]byte(canonical(ea)))))
			default:
				diffValues(path+"."+k, ea, eb, out)
			}
		}
		return
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			break
		}
		for i := range x {
			diffValues(fmt.Sprintf("%s[%d]", path, i), x[i], y[i], out)
		}
		return
	}
	if ca, cb := canonical(a), canonical(b); ca != cb {
		*out = append(*out, fmt.Sprintf("%s is %s, the copy %s", path, clip([]byte(ca)), clip([]byte(cb))))
	}
}
