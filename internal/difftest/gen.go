package difftest

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"regexp"
	"strings"
)

// Generate returns the request sequence of a seed: the same seed gives the
// same requests. The generator draws from small pools of providers,
// classes, traits, aggregates and consumers, so that requests often refer
// to things earlier ones created, and it never looks at answers (a
// sequence is replayable and shrinkable on its own). Generations that a
// request needs right come from placeholders each target fills in
// (Request); the rest are guesses, often wrong on purpose.
func Generate(seed int64, steps int) []*Request {
	g := newGen(seed)
	out := make([]*Request, steps)
	for i := range out {
		g.step = i
		out[i] = g.next()
	}
	return out
}

type gen struct {
	r    *rand.Rand
	step int
	// fixed are provider uuids the generator names itself; created holds
	// the references (gen:N) of providers created without one.
	fixed, created []string
	consumers      []string
	aggregates     []string
	// version is the microversion of the request being built (its
	// effective minor: an absent header is 0, latest 39).
	version int
}

func newGen(seed int64) *gen {
	g := &gen{r: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))}
	for i := 0; i < 10; i++ {
		g.fixed = append(g.fixed, g.uuid())
	}
	for i := 0; i < 8; i++ {
		g.consumers = append(g.consumers, g.uuid())
	}
	for i := 0; i < 5; i++ {
		g.aggregates = append(g.aggregates, g.uuid())
	}
	return g
}

func (g *gen) uuid() string {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(g.r.IntN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func pick[T any](g *gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

// Pools. Standard names are a few of os-resource-classes and os-traits.
var (
	classes   = []string{"VCPU", "MEMORY_MB", "DISK_GB", "SRIOV_NET_VF", "IPV4_ADDRESS", "CUSTOM_GOLD", "CUSTOM_SILVER", "CUSTOM_BAREMETAL"}
	badClass  = []string{"vcpu", "CUSTOM_", "CUSTOM_lower", "NOT_A_CLASS", "CUSTOM_" + strings.Repeat("X", 250), "CUSTOM_\u00c9", "CUSTOM_A-B"}
	traits    = []string{"HW_CPU_X86_AVX", "HW_CPU_X86_SSE", "STORAGE_DISK_SSD", "COMPUTE_VOLUME_MULTI_ATTACH", "CUSTOM_FAST", "CUSTOM_RACK_1", "CUSTOM_PHYSNET_A"}
	badTrait  = []string{"custom_x", "CUSTOM_", "NOT_A_TRAIT", "CUSTOM_\u00c9", "CUSTOM_" + strings.Repeat("Y", 260)}
	rpNames   = []string{"cn1", "cn2", "cn3", "numa0", "numa1", "pf0", "shared-disk", "ip-pool", "r\u00e9seau \u00fc", "gpu 0", "cn1"}
	projects  = []string{"proj-a", "proj-b", "proj-c"}
	users     = []string{"user-a", "user-b"}
	consTypes = []string{"INSTANCE", "MIGRATION", "VOLUME"}
)

// rp is a provider reference for a path or body; ref is the form a
// {{rpgen:REF}} placeholder takes.
func (g *gen) rp() (text, ref string) {
	switch k := g.r.IntN(100); {
	case k < 3:
		return pick(g, "not-a-uuid", strings.ToUpper(g.fixed[0]), strings.ReplaceAll(g.fixed[1], "-", ""), "12345"), ""
	case k < 8:
		u := g.uuid()
		return u, u
	case k < 25 && len(g.created) > 0:
		ref := g.created[g.r.IntN(len(g.created))]
		return "{{" + ref + "}}", ref
	case k < 70:
		u := g.fixed[g.r.IntN(4)]
		return u, u
	default:
		u := g.fixed[g.r.IntN(len(g.fixed))]
		return u, u
	}
}

func (g *gen) rpText() string { t, _ := g.rp(); return t }

// rpKey is a provider to key a body object with: never a generated one,
// since an error may print the object as Python does, keys sorted, and
// the targets' generated uuids sort differently.
func (g *gen) rpKey() (text, ref string) {
	for {
		if t, ref := g.rp(); !strings.HasPrefix(t, "{{") {
			return t, ref
		}
	}
}

func (g *gen) class() string {
	if g.chance(0.04) {
		return pick(g, badClass...)
	}
	return pick(g, classes...)
}

func (g *gen) trait() string {
	if g.chance(0.04) {
		return pick(g, badTrait...)
	}
	return pick(g, traits...)
}

func (g *gen) consumer() string {
	if g.chance(0.03) {
		return pick(g, "not-a-uuid", strings.ReplaceAll(g.consumers[0], "-", ""), g.uuid())
	}
	return g.consumers[g.r.IntN(len(g.consumers))]
}

func (g *gen) aggregate() string {
	if g.chance(0.03) {
		return pick(g, "not-a-uuid", "")
	}
	return g.aggregates[g.r.IntN(len(g.aggregates))]
}

// rpGeneration is the provider's generation: right (a placeholder) most
// of the time.
func (g *gen) rpGeneration(ref string) any {
	if ref != "" && g.chance(0.85) {
		return lit("{{rpgen:" + ref + "}}")
	}
	return g.r.IntN(4)
}

func (g *gen) consumerGeneration(consumer string) any {
	if g.chance(0.85) {
		return lit("{{cgen:" + consumer + "}}")
	}
	return pick[any](g, nil, 0, 1, 2)
}

func (g *gen) amount() any {
	if g.chance(0.05) {
		return pick[any](g, 0, -1, lit("1.5"), "1", lit("2147483648"))
	}
	return 1 + g.r.IntN(4)
}

// op is one kind of request, with its weight.
type op struct {
	weight int
	build  func(g *gen) *Request
}

var ops = []op{
	{8, (*gen).createProvider}, {3, (*gen).updateProvider}, {2, (*gen).deleteProvider},
	{3, (*gen).getProvider}, {4, (*gen).listProviders},
	{4, (*gen).postInventory}, {6, (*gen).putInventories}, {3, (*gen).putInventory},
	{3, (*gen).getInventories}, {2, (*gen).deleteInventories},
	{3, (*gen).putAggregates}, {2, (*gen).getAggregates},
	{2, (*gen).putTrait}, {2, (*gen).listTraits}, {1, (*gen).traitByName},
	{3, (*gen).putProviderTraits}, {2, (*gen).providerTraits},
	{2, (*gen).postClass}, {2, (*gen).putClass}, {2, (*gen).getClasses}, {1, (*gen).deleteClass},
	{9, (*gen).putAllocations}, {4, (*gen).getAllocations}, {2, (*gen).deleteAllocations}, {4, (*gen).postAllocations},
	{2, (*gen).providerAllocations}, {2, (*gen).providerUsages}, {3, (*gen).usages},
	{6, (*gen).candidates}, {2, (*gen).reshape}, {1, (*gen).root}, {3, (*gen).noise},
}

var totalWeight = func() int {
	n := 0
	for _, o := range ops {
		n += o.weight
	}
	return n
}()

func (g *gen) next() *Request {
	k := g.r.IntN(totalWeight)
	for _, o := range ops {
		if k < o.weight {
			return o.build(g)
		}
		k -= o.weight
	}
	panic("unreachable")
}

// req starts a request at a microversion chosen around min (the route's
// first): mostly valid for the route, sometimes below it, absent, latest
// or malformed.
func (g *gen) req(method, path string, min int) *Request {
	q := &Request{Method: method, Path: path}
	auth := "admin"
	switch k := g.r.IntN(100); {
	case k < 2:
		auth = ""
	case k < 5:
		auth = pick(g, "alice", "alice:proj-a", "service")
	}
	if auth != "" {
		q.Headers = append(q.Headers, [2]string{"X-Auth-Token", auth})
	}
	switch k := g.r.IntN(100); {
	case k < 8:
		g.version = 0
	case k < 13:
		g.version = 39
		q.Headers = append(q.Headers, [2]string{"OpenStack-API-Version", "placement latest"})
	case k < 16:
		g.version = 39
		q.Headers = append(q.Headers, [2]string{"OpenStack-API-Version",
			pick(g, "placement 1.40", "placement 2.0", "placement 1", "placement 1.a", "placement", "compute 1.5",
				"placement 1.010", "placement 0.9", "PLACEMENT 1.20", "placement  1.20 ")})
	case k < 18:
		g.version = 0
		q.Headers = append(q.Headers, [2]string{"X-OpenStack-Placement-API-Version", "1.20"})
	default:
		lo := min
		if g.chance(0.08) {
			lo = 0
		}
		g.version = lo + g.r.IntN(40-lo)
		if g.chance(0.3) {
			g.version = 39
		}
		q.Headers = append(q.Headers, [2]string{"OpenStack-API-Version", fmt.Sprintf("placement 1.%d", g.version)})
	}
	if g.chance(0.02) {
		// A second version header: microversion_parse reads them joined.
		q.Headers = append(q.Headers, [2]string{"OpenStack-API-Version", pick(g, "placement 1.5", "compute 2.1", "placement latest")})
	}
	if g.chance(0.12) {
		q.Headers = append(q.Headers, [2]string{"Accept", pick(g, "application/json", "*/*", "text/html", "text/plain",
			"application/json;q=0.5, text/html", "text/html;q=0.9, application/json;q=0.1", "application/*",
			"image/png", "application/json; charset=utf-8", "garbage;;;", "text/*", "application/json;q=0")})
	}
	return q
}

// at reports whether the request's microversion is at least 1.minor.
func (g *gen) at(minor int) bool { return g.version >= minor }

// withBody gives q a JSON body: usually as built, sometimes with one node
// changed or the text malformed, and usually declared as JSON.
func (g *gen) withBody(q *Request, v any) *Request {
	switch k := g.r.IntN(100); {
	case k < 10:
		q.Note = "mutated: " + mutate(g.r, &v)
		q.Body = []byte(g.fixGenRefs(encode(v)))
	case k < 15:
		var what string
		s, what := malform(g.r, encode(v))
		q.Body, q.Note = []byte(g.fixGenRefs(s)), "malformed: "+what
	default:
		q.Body = []byte(encode(v))
	}
	switch k := g.r.IntN(100); {
	case k < 2:
	case k < 4:
		q.Headers = append(q.Headers, [2]string{"Content-Type", pick(g, "text/plain", "application/x-www-form-urlencoded", "application/JSON")})
	case k < 6:
		q.Headers = append(q.Headers, [2]string{"Content-Type", "application/json; charset=UTF-8"})
	default:
		q.Headers = append(q.Headers, [2]string{"Content-Type", "application/json"})
	}
	return q
}

var genRefRE = regexp.MustCompile(`\{\{gen:\d+\}\}`)

// fixGenRefs names fixed providers instead of generated ones in a body
// that is likely refused: its error may show the body's objects as Python
// prints them, keys sorted, and two targets' generated uuids sort
// differently.
func (g *gen) fixGenRefs(body string) string {
	return genRefRE.ReplaceAllStringFunc(body, func(string) string { return g.fixed[g.r.IntN(len(g.fixed))] })
}

// query builds a query string from pairs (values escaped).
func query(pairs ...[2]string) string {
	if len(pairs) == 0 {
		return ""
	}
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = url.QueryEscape(p[0]) + "=" + url.QueryEscape(p[1])
	}
	return "?" + strings.Join(parts, "&")
}

// Resource providers.

func (g *gen) createProvider() *Request {
	q := g.req("POST", "/resource_providers", 0)
	body := o("name", pick(g, rpNames...))
	if g.chance(0.05) {
		body.set("name", pick(g, "", strings.Repeat("n", 201), g.uuid()))
	}
	if g.chance(0.7) {
		u := pick(g, g.fixed...)
		switch k := g.r.IntN(20); {
		case k == 0:
			u = strings.ToUpper(u)
		case k == 1:
			u = strings.ReplaceAll(u, "-", "")
		}
		body.set("uuid", u)
	} else {
		q.Creates = fmt.Sprintf("gen:%d", g.step)
		g.created = append(g.created, q.Creates)
	}
	if g.at(14) && g.chance(0.4) {
		body.set("parent_provider_uuid", g.rpText())
	} else if g.chance(0.05) {
		body.set("parent_provider_uuid", nil)
	}
	if g.chance(0.5) {
		// Key order of the body is the client's.
		body.fields[0], body.fields[len(body.fields)-1] = body.fields[len(body.fields)-1], body.fields[0]
	}
	return g.withBody(q, body)
}

func (g *gen) updateProvider() *Request {
	t, _ := g.rp()
	q := g.req("PUT", "/resource_providers/"+t, 0)
	body := o("name", pick(g, rpNames...))
	if g.at(14) && g.chance(0.5) {
		if g.chance(0.2) {
			body.set("parent_provider_uuid", nil)
		} else {
			body.set("parent_provider_uuid", g.rpText())
		}
	}
	return g.withBody(q, body)
}

func (g *gen) deleteProvider() *Request {
	return g.req("DELETE", "/resource_providers/"+g.rpText(), 0)
}

func (g *gen) getProvider() *Request {
	q := g.req("GET", "/resource_providers/"+g.rpText(), 0)
	if g.chance(0.05) {
		q.Method = "HEAD"
	}
	return q
}

func (g *gen) listProviders() *Request {
	q := g.req("GET", "/resource_providers", 0)
	var qs [][2]string
	n := g.r.IntN(4)
	for i := 0; i < n; i++ {
		switch g.r.IntN(9) {
		case 0:
			qs = append(qs, [2]string{"name", pick(g, rpNames...)})
		case 1:
			qs = append(qs, [2]string{"uuid", g.rpText()})
		case 2:
			qs = append(qs, [2]string{"member_of", g.memberOf()})
		case 3:
			qs = append(qs, [2]string{"resources", g.resourcesQuery()})
		case 4:
			qs = append(qs, [2]string{"in_tree", g.rpText()})
		case 5:
			qs = append(qs, [2]string{"required", g.requiredQuery()})
		case 6:
			qs = append(qs, [2]string{pick(g, "bogus", "limit", "resources1"), "1"})
		case 7:
			// Repeated: AND from 1.24 (member_of), 1.39 (required).
			k := pick(g, "member_of", "required")
			v1, v2 := g.memberOf(), g.memberOf()
			if k == "required" {
				v1, v2 = g.requiredQuery(), g.requiredQuery()
			}
			qs = append(qs, [2]string{k, v1}, [2]string{k, v2})
		default:
			qs = append(qs, [2]string{"name", pick(g, rpNames...)})
		}
	}
	q.Path += g.resolveRefs(query(qs...))
	return q
}

// resolveRefs puts back the braces of generated-uuid placeholders that
// query escaping encoded.
func (g *gen) resolveRefs(s string) string {
	return strings.NewReplacer("%7B%7B", "{{", "%7D%7D", "}}", "%3A", ":", "%2C", ",", "%21", "!").Replace(s)
}

func (g *gen) memberOf() string {
	switch g.r.IntN(5) {
	case 0:
		return "in:" + g.aggregate() + "," + g.aggregate()
	case 1:
		return "!" + g.aggregate()
	case 2:
		return "!in:" + g.aggregate()
	default:
		return g.aggregate()
	}
}

func (g *gen) resourcesQuery() string {
	n := 1 + g.r.IntN(3)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%s:%d", g.class(), 1+g.r.IntN(8))
		if g.chance(0.03) {
			parts[i] = pick(g, "VCPU", "VCPU:x", "VCPU:-1", ":1", "VCPU:0")
		}
	}
	return strings.Join(parts, ",")
}

func (g *gen) requiredQuery() string {
	n := 1 + g.r.IntN(2)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = g.trait()
		if g.chance(0.3) {
			parts[i] = "!" + parts[i]
		}
	}
	s := strings.Join(parts, ",")
	if g.chance(0.2) {
		s = "in:" + strings.ReplaceAll(s, "!", "")
	}
	return s
}

// Inventories.

func (g *gen) inventory(withClass bool) *obj {
	total := 1 + g.r.IntN(64)
	inv := o()
	if withClass {
		inv.set("resource_class", g.class())
	}
	inv.set("total", total)
	if g.chance(0.5) {
		inv.set("reserved", g.r.IntN(3))
	}
	if g.chance(0.3) {
		inv.set("min_unit", 1)
	}
	if g.chance(0.3) {
		inv.set("max_unit", total)
	}
	if g.chance(0.2) {
		inv.set("step_size", pick(g, 1, 1, 2))
	}
	if g.chance(0.4) {
		inv.set("allocation_ratio", pick[any](g, lit("1.0"), lit("16.0"), lit("1.5"), 2, lit("0.5")))
	}
	return inv
}

func (g *gen) postInventory() *Request {
	t, ref := g.rp()
	q := g.req("POST", "/resource_providers/"+t+"/inventories", 0)
	body := g.inventory(true)
	body.set("resource_provider_generation", g.rpGeneration(ref))
	return g.withBody(q, body)
}

func (g *gen) putInventories() *Request {
	t, ref := g.rp()
	q := g.req("PUT", "/resource_providers/"+t+"/inventories", 0)
	invs := o()
	for i, n := 0, g.r.IntN(4); i < n; i++ {
		invs.set(g.class(), g.inventory(false))
	}
	return g.withBody(q, o("resource_provider_generation", g.rpGeneration(ref), "inventories", invs))
}

func (g *gen) putInventory() *Request {
	t, ref := g.rp()
	q := g.req("PUT", "/resource_providers/"+t+"/inventories/"+g.class(), 0)
	body := g.inventory(false)
	body.set("resource_provider_generation", g.rpGeneration(ref))
	return g.withBody(q, body)
}

func (g *gen) getInventories() *Request {
	if g.chance(0.5) {
		return g.req("GET", "/resource_providers/"+g.rpText()+"/inventories/"+g.class(), 0)
	}
	return g.req("GET", "/resource_providers/"+g.rpText()+"/inventories", 0)
}

func (g *gen) deleteInventories() *Request {
	if g.chance(0.5) {
		return g.req("DELETE", "/resource_providers/"+g.rpText()+"/inventories/"+g.class(), 0)
	}
	return g.req("DELETE", "/resource_providers/"+g.rpText()+"/inventories", 5)
}

// Aggregates and traits.

func (g *gen) putAggregates() *Request {
	t, ref := g.rp()
	q := g.req("PUT", "/resource_providers/"+t+"/aggregates", 1)
	var aggs []any
	for i, n := 0, g.r.IntN(4); i < n; i++ {
		aggs = append(aggs, g.aggregate())
	}
	if aggs == nil {
		aggs = []any{}
	}
	if g.at(19) {
		return g.withBody(q, o("aggregates", aggs, "resource_provider_generation", g.rpGeneration(ref)))
	}
	return g.withBody(q, aggs)
}

func (g *gen) getAggregates() *Request {
	return g.req("GET", "/resource_providers/"+g.rpText()+"/aggregates", 1)
}

func (g *gen) putTrait() *Request {
	return g.req("PUT", "/traits/"+url.PathEscape(g.trait()), 6)
}

func (g *gen) listTraits() *Request {
	q := g.req("GET", "/traits", 6)
	var qs [][2]string
	if g.chance(0.5) {
		qs = append(qs, [2]string{"name", pick(g, "startswith:CUSTOM", "startswith:HW_CPU", "in:"+g.trait()+","+g.trait(), "bogus:x", "startswith:")})
	}
	if g.chance(0.3) {
		qs = append(qs, [2]string{"associated", pick(g, "true", "false", "yes")})
	}
	q.Path += query(qs...)
	return q
}

func (g *gen) traitByName() *Request {
	return g.req(pick(g, "GET", "DELETE"), "/traits/"+url.PathEscape(g.trait()), 6)
}

func (g *gen) putProviderTraits() *Request {
	t, ref := g.rp()
	q := g.req("PUT", "/resource_providers/"+t+"/traits", 6)
	var ts []any
	for i, n := 0, g.r.IntN(4); i < n; i++ {
		ts = append(ts, g.trait())
	}
	if ts == nil {
		ts = []any{}
	}
	return g.withBody(q, o("traits", ts, "resource_provider_generation", g.rpGeneration(ref)))
}

func (g *gen) providerTraits() *Request {
	return g.req(pick(g, "GET", "GET", "DELETE"), "/resource_providers/"+g.rpText()+"/traits", 6)
}

// Resource classes.

func (g *gen) postClass() *Request {
	q := g.req("POST", "/resource_classes", 2)
	return g.withBody(q, o("name", g.class()))
}

func (g *gen) putClass() *Request {
	q := g.req("PUT", "/resource_classes/"+url.PathEscape(g.class()), 2)
	if g.at(7) && g.chance(0.9) {
		return q
	}
	return g.withBody(q, o("name", g.class()))
}

func (g *gen) getClasses() *Request {
	if g.chance(0.5) {
		return g.req("GET", "/resource_classes", 2)
	}
	return g.req("GET", "/resource_classes/"+url.PathEscape(g.class()), 2)
}

func (g *gen) deleteClass() *Request {
	return g.req("DELETE", "/resource_classes/"+url.PathEscape(g.class()), 2)
}

// Allocations.

// allocations is a consumer's allocations in the form of the request's
// microversion: a list before 1.12, an object keyed by provider after.
func (g *gen) allocations() any {
	n := 1 + g.r.IntN(3)
	if g.chance(0.05) {
		n = 0
	}
	asList := !g.at(12) || g.chance(0.03)
	var list []any
	dict := o()
	for i := 0; i < n; i++ {
		res := o()
		for j, m := 0, 1+g.r.IntN(2); j < m; j++ {
			res.set(g.class(), g.amount())
		}
		rp, _ := g.rpKey()
		if asList {
			list = append(list, o("resource_provider", o("uuid", rp), "resources", res))
		} else {
			dict.set(rp, o("resources", res))
		}
	}
	if asList {
		if list == nil {
			list = []any{}
		}
		return list
	}
	return dict
}

func (g *gen) consumerBody(consumer string) *obj {
	body := o("allocations", g.allocations())
	if g.at(8) || g.chance(0.3) {
		body.set("project_id", pick(g, projects...))
		body.set("user_id", pick(g, users...))
	}
	if g.at(28) {
		body.set("consumer_generation", g.consumerGeneration(consumer))
	}
	if g.at(38) {
		body.set("consumer_type", pick(g, consTypes...))
	}
	return body
}

func (g *gen) putAllocations() *Request {
	c := g.consumer()
	q := g.req("PUT", "/allocations/"+c, 0)
	return g.withBody(q, g.consumerBody(c))
}

func (g *gen) postAllocations() *Request {
	q := g.req("POST", "/allocations", 13)
	body := o()
	for i, n := 0, 1+g.r.IntN(3); i < n; i++ {
		c := g.consumer()
		cb := g.consumerBody(c)
		if g.chance(0.15) {
			cb.set("allocations", o())
		}
		body.set(c, cb)
	}
	return g.withBody(q, body)
}

func (g *gen) getAllocations() *Request {
	return g.req("GET", "/allocations/"+g.consumer(), 0)
}

func (g *gen) deleteAllocations() *Request {
	return g.req("DELETE", "/allocations/"+g.consumer(), 0)
}

func (g *gen) providerAllocations() *Request {
	return g.req("GET", "/resource_providers/"+g.rpText()+"/allocations", 0)
}

func (g *gen) providerUsages() *Request {
	return g.req("GET", "/resource_providers/"+g.rpText()+"/usages", 0)
}

func (g *gen) usages() *Request {
	q := g.req("GET", "/usages", 9)
	var qs [][2]string
	if g.chance(0.95) {
		qs = append(qs, [2]string{"project_id", pick(g, projects...)})
	}
	if g.chance(0.4) {
		qs = append(qs, [2]string{"user_id", pick(g, users...)})
	}
	if g.at(38) && g.chance(0.4) {
		qs = append(qs, [2]string{"consumer_type", pick(g, "INSTANCE", "MIGRATION", "all", "unknown", "bad-type")})
	}
	q.Path += query(qs...)
	return q
}

func (g *gen) candidates() *Request {
	q := g.req("GET", "/allocation_candidates", 10)
	qs := [][2]string{{"resources", g.resourcesQuery()}}
	if g.chance(0.05) {
		qs = nil
	}
	if g.chance(0.3) {
		qs = append(qs, [2]string{"limit", pick(g, "1", "2", "5", "0", "x")})
	}
	if g.chance(0.3) {
		qs = append(qs, [2]string{"required", g.requiredQuery()})
		if g.chance(0.2) {
			qs = append(qs, [2]string{"required", g.requiredQuery()})
		}
	}
	if g.chance(0.2) {
		qs = append(qs, [2]string{"member_of", g.memberOf()})
	}
	if g.chance(0.15) {
		qs = append(qs, [2]string{"in_tree", g.rpText()})
	}
	if g.chance(0.1) {
		qs = append(qs, [2]string{"root_required", pick(g, "CUSTOM_FAST", "!CUSTOM_RACK_1", "HW_CPU_X86_AVX,!CUSTOM_FAST")})
	}
	if g.chance(0.35) {
		suffixes := []string{"1", "2", "_NET", "_x"}
		for i, n := 0, 1+g.r.IntN(2); i < n; i++ {
			s := pick(g, suffixes...)
			qs = append(qs, [2]string{"resources" + s, g.resourcesQuery()})
			if g.chance(0.3) {
				qs = append(qs, [2]string{"required" + s, g.requiredQuery()})
			}
			if g.chance(0.15) {
				qs = append(qs, [2]string{"member_of" + s, g.memberOf()})
			}
		}
		if g.chance(0.7) {
			qs = append(qs, [2]string{"group_policy", pick(g, "none", "isolate", "bogus")})
		}
		if g.chance(0.15) {
			qs = append(qs, [2]string{"same_subtree", pick(g, "_NET,_x", "1,2", "_NET")})
		}
	}
	q.Path += g.resolveRefs(query(qs...))
	return q
}

func (g *gen) reshape() *Request {
	q := g.req("POST", "/reshaper", 30)
	invs := o()
	for i, n := 0, 1+g.r.IntN(2); i < n; i++ {
		t, ref := g.rpKey()
		pinv := o()
		for j, m := 0, g.r.IntN(3); j < m; j++ {
			pinv.set(g.class(), g.inventory(false))
		}
		invs.set(t, o("resource_provider_generation", g.rpGeneration(ref), "inventories", pinv))
	}
	allocs := o()
	for i, n := 0, g.r.IntN(3); i < n; i++ {
		c := g.consumer()
		cb := g.consumerBody(c)
		if !g.at(28) {
			cb.set("consumer_generation", g.consumerGeneration(c))
		}
		allocs.set(c, cb)
	}
	return g.withBody(q, o("inventories", invs, "allocations", allocs))
}

func (g *gen) root() *Request {
	return g.req("GET", "/", 0)
}

// noise is a request off the map: an unknown path, a method a route does
// not have, a body where none belongs, or odd headers.
func (g *gen) noise() *Request {
	switch g.r.IntN(6) {
	case 0:
		// No path starting "//": the reference server (Python's http.server)
		// reduces it to "/", where a production server would not.
		return g.req(pick(g, "GET", "POST"), pick(g, "/nope", "/resource_providers/", "/resource_providers//", "/resource_providers/"+g.fixed[0]+"/nope",
			"/placement", "/traits/", "/allocations/", "/resource_classes/"), 0)
	case 1:
		return g.req(pick(g, "PATCH", "HEAD", "OPTIONS", "POST", "DELETE"), pick(g, "/resource_providers/"+g.fixed[0],
			"/resource_classes", "/traits", "/usages", "/allocation_candidates", "/reshaper", "/allocations", "/", "/resource_providers/"+g.fixed[1]+"/usages"), 0)
	case 2:
		q := g.req("GET", "/resource_providers", 0)
		q.Body = []byte(`{"a": 1}`)
		if g.chance(0.5) {
			q.Headers = append(q.Headers, [2]string{"Content-Type", "application/json"})
		}
		return q
	case 3:
		q := g.req("GET", "/resource_classes", 2)
		q.Headers = append(q.Headers, [2]string{"Accept", pick(g, "text/html", "text/plain", "image/png")})
		return q
	case 4:
		q := g.req("POST", "/resource_classes", 2)
		q.Headers = append(q.Headers, [2]string{"Content-Length", pick(g, "abc", "-1")})
		return q
	default:
		q := g.req("GET", "/resource_providers/"+g.rpText(), 0)
		q.Headers = append(q.Headers, [2]string{"X-Openstack-Request-Id", pick(g, "req-"+g.uuid(), "bogus")})
		return q
	}
}
