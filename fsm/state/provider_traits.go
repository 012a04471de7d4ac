package state

import (
	"regexp"
	"sort"
	"strings"
)

// ProviderTraitsResult is a provider's traits (by name) with its generation.
type ProviderTraitsResult struct {
	Generation int64
	Traits     []Trait
}

// ProviderTraits copies the provider's traits, by name.
func (s *Store) ProviderTraits(p *Provider) []Trait {
	out := make([]Trait, 0, len(p.Traits))
	for _, name := range SortedKeys(p.Traits) {
		if t := s.Traits.Get(name); t != nil {
			out = append(out, *t)
		}
	}
	return out
}

// setProviderTraits makes p's traits exactly want, keeping TraitIndex in
// step, and returns the provider as it is now. As upstream, the generation
// is bumped only if something changed.
func (s *Store) setProviderTraits(p *Provider, want map[string]bool, m Meta) *Provider {
	p = s.editProvider(p)
	if s.setTraits(p, want) {
		p.bumpGeneration(m)
	}
	return p
}

// SetProviderTraits is PUT /resource_providers/{uuid}/traits: it replaces
// the provider's traits, which must all exist.
type SetProviderTraits struct {
	Provider   string   `json:"Provider"`
	Generation int64    `json:"Generation"`
	Traits     []string `json:"Traits"`
}

func (c *SetProviderTraits) Kind() string { return "provider.set_traits" }

func (c *SetProviderTraits) Apply(s *Store, m Meta) (any, error) {
	p := s.Providers.Get(c.Provider)
	if p == nil {
		return nil, ProviderNotFound(c.Provider)
	}
	if c.Generation != p.Generation {
		return nil, Conflictf(CodeConcurrentUpdate,
			"Resource provider's generation already changed. Please update the generation and try again.")
	}
	want := make(map[string]bool, len(c.Traits))
	var missing []string
	for _, t := range c.Traits {
		if s.Traits.Get(t) == nil {
			if !want[t] {
				missing = append(missing, t)
			}
		}
		want[t] = true
	}
	if len(missing) > 0 {
		// Upstream joins a Python set, in no particular order; sorted here.
		sort.Strings(missing)
		return nil, Errorf("No such trait %s", strings.Join(missing, ", "))
	}
	p = s.setProviderTraits(p, want, m)
	return ProviderTraitsResult{Generation: p.Generation, Traits: s.ProviderTraits(p)}, nil
}

// DeleteProviderTraits is DELETE /resource_providers/{uuid}/traits: it
// removes every trait from the provider. No generation is given.
type DeleteProviderTraits struct {
	Provider string `json:"Provider"`
}

func (c *DeleteProviderTraits) Kind() string { return "provider.delete_traits" }

func (c *DeleteProviderTraits) Apply(s *Store, m Meta) (any, error) {
	p := s.Providers.Get(c.Provider)
	if p == nil {
		return nil, ProviderNotFound(c.Provider)
	}
	p = s.setProviderTraits(p, nil, m)
	return ProviderTraitsResult{Generation: p.Generation}, nil
}

// TraitFilter selects traits for GET /traits. NameIn nil means no name
// list filter; Prefix nil no prefix filter; Associated nil either.
type TraitFilter struct {
	NameIn     []string
	Prefix     *string
	Associated *bool
}

// ListTraits returns copies of the traits the filter selects, by name.
func (s *Store) ListTraits(f TraitFilter) []Trait {
	var in map[string]bool
	if f.NameIn != nil {
		in = make(map[string]bool, len(f.NameIn))
		for _, n := range f.NameIn {
			in[n] = true
		}
	}
	var prefix *regexp.Regexp
	if f.Prefix != nil {
		prefix = likePrefix(*f.Prefix)
	}
	var out []Trait
	for name, t := range s.Traits.All() {
		if in != nil && !in[name] {
			continue
		}
		if prefix != nil && !prefix.MatchString(name) {
			continue
		}
		if f.Associated != nil && *f.Associated != s.TraitIndex.Has(name) {
			continue
		}
		out = append(out, *t)
	}
	return out
}

// likePrefix matches what upstream's SQL `name LIKE prefix || '%'` does
// (SQLite's LIKE: "_" is any one character, "%" any run, ASCII letters
// match regardless of case).
func likePrefix(prefix string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	for _, r := range prefix {
		switch {
		case r == '_':
			b.WriteString(`.`)
		case r == '%':
			b.WriteString(`.*`)
		case r < 128 && ('a' <= r|0x20 && r|0x20 <= 'z'):
			b.WriteString(`[` + strings.ToUpper(string(r)) + strings.ToLower(string(r)) + `]`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return regexp.MustCompile(b.String() + `.*$`)
}
