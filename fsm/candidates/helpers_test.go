package candidates_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/placementd/placementd/fsm/candidates"
	"github.com/placementd/placementd/fsm/state"
)

// builder lays out a store directly (the tests here are about the search,
// not the commands that normally build the state): it keeps the records
// and assembles st, a version of them, after each change.
type builder struct {
	t         testing.TB
	st        *state.Store
	providers []*state.Provider
	classes   []*state.ResourceClass
	traitList []*state.Trait
}

func newBuilder(t testing.TB) *builder { return &builder{t: t, st: state.New()} }

func (b *builder) assemble() {
	b.st = state.Assemble(b.classes, b.traitList, b.providers)
}

// provider adds a provider named name (its uuid is derived from the name)
// under parent ("" for a root).
func (b *builder) provider(name, parent string) *state.Provider {
	p := &state.Provider{
		ID: b.st.NextProviderID, UUID: uuidOf(name), Name: name,
		Inventories: map[string]*state.Inventory{}, Traits: map[string]bool{},
		Aggregates: map[string]bool{}, Usages: map[string]int64{},
	}
	p.RootUUID = p.UUID
	if parent != "" {
		pp := b.st.Providers.Get(uuidOf(parent))
		if pp == nil {
			b.t.Fatalf("no parent %s", parent)
		}
		p.ParentUUID, p.RootUUID = pp.UUID, pp.RootUUID
	}
	b.providers = append(b.providers, p)
	b.assemble()
	return p
}

// uuidOf makes a deterministic uuid-looking identifier from a name.
func uuidOf(name string) string {
	h := uint64(14695981039346656037)
	for _, c := range []byte(name) {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", uint32(h>>32), h&0xffffffffffff)
}

// class makes a custom resource class known.
func (b *builder) class(name string) {
	if b.st.Classes.Get(name) == nil {
		b.classes = append(b.classes, &state.ResourceClass{ID: b.st.NextClassID, Name: name})
		b.assemble()
	}
}

// trait makes a custom trait known.
func (b *builder) trait(name string) {
	if b.st.Traits.Get(name) == nil {
		b.traitList = append(b.traitList, &state.Trait{Name: name})
		b.assemble()
	}
}

func (b *builder) inv(name, class string, total int64, opts ...func(*state.Inventory)) {
	p := b.st.Providers.Get(uuidOf(name))
	b.class(class)
	inv := &state.Inventory{Total: total, MinUnit: 1, MaxUnit: total, StepSize: 1, AllocationRatio: 1}
	for _, o := range opts {
		o(inv)
	}
	p.Inventories[class] = inv
}

func (b *builder) use(name, class string, used int64) {
	p := b.st.Providers.Get(uuidOf(name))
	if used == 0 {
		delete(p.Usages, class)
		return
	}
	p.Usages[class] = used
}

func (b *builder) traits(name string, traits ...string) {
	p := b.st.Providers.Get(uuidOf(name))
	for _, t := range traits {
		b.trait(t)
		p.Traits[t] = true
	}
	b.assemble()
}

func (b *builder) aggs(name string, aggs ...string) {
	p := b.st.Providers.Get(uuidOf(name))
	for _, a := range aggs {
		p.Aggregates[a] = true
	}
	b.assemble()
}

// names maps uuids back to provider names for readable failures.
func (b *builder) names() map[string]string {
	m := map[string]string{}
	for p := range b.st.Providers.InOrder() {
		m[p.UUID] = p.Name
	}
	return m
}

// render writes a candidate with provider names, classes and mappings
// sorted, so that equal candidates render equally.
func render(c candidates.Candidate, names map[string]string) string {
	var parts []string
	for _, a := range c.Allocations {
		var rs []string
		for _, r := range a.Resources {
			rs = append(rs, fmt.Sprintf("%s:%d", r.Class, r.Amount))
		}
		sort.Strings(rs)
		parts = append(parts, names[a.Provider]+"("+strings.Join(rs, ",")+")")
	}
	sort.Strings(parts)
	var ms []string
	for _, m := range c.Mappings {
		var ps []string
		for _, u := range m.Providers {
			ps = append(ps, names[u])
		}
		sort.Strings(ps)
		ms = append(ms, fmt.Sprintf("%q=%s", m.Suffix, strings.Join(ps, "+")))
	}
	sort.Strings(ms)
	return strings.Join(parts, " ") + " | " + strings.Join(ms, " ")
}

func renderAll(cs []candidates.Candidate, names map[string]string) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = render(c, names)
	}
	sort.Strings(out)
	return out
}

func renderSummary(s candidates.Summary, names map[string]string) string {
	var rs []string
	for _, r := range s.Resources {
		rs = append(rs, fmt.Sprintf("%s=%d/%d", r.Class, r.Used, r.Capacity))
	}
	traits := append([]string(nil), s.Traits...)
	sort.Strings(traits)
	return fmt.Sprintf("%s parent=%s root=%s res=%s traits=%s", names[s.UUID], names[s.ParentUUID],
		names[s.RootUUID], strings.Join(rs, ","), strings.Join(traits, ","))
}

func renderSummaries(ss []candidates.Summary, names map[string]string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = renderSummary(s, names)
	}
	sort.Strings(out)
	return out
}
