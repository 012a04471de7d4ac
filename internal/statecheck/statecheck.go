package statecheck

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/placementd/placementd/fsm/image"
	"github.com/placementd/placementd/fsm/state"
)

// Digest hashes the state, leaving out the index of the last command
// applied.
func Digest(s *state.Store) string {
	return image.Digest(s.Image())
}

// Consistent reports how s differs from the store Load rebuilds from its
// image: an index the writes maintain (usages, provider consumers,
// project usages, trait and aggregate membership, names, children) that
// drifted from the data, or an image that does not load back the same.
// It also refuses negative usages.
func Consistent(s *state.Store) error {
	img := s.Image()
	// Load takes the image's consumers as its own (it may intern their
	// strings in place), and these are the version's: give it copies.
	owned := *img
	owned.Consumers = make([]*state.Consumer, len(img.Consumers))
	for i, c := range img.Consumers {
		cp := *c
		// slices.Clone keeps an empty list empty, not null: a decoded
		// snapshot may hold a consumer with "Allocations":[].
		cp.Allocations = slices.Clone(c.Allocations)
		owned.Consumers[i] = &cp
	}
	fresh, err := state.Load(&owned)
	if err != nil {
		return fmt.Errorf("the store's own image does not load: %w", err)
	}
	if a, b := image.Digest(img), image.Digest(fresh.Image()); a != b {
		return fmt.Errorf("image does not round-trip: digest %s, reloaded %s", a, b)
	}
	for _, ix := range []struct {
		name      string
		got, want any
	}{
		{"ProviderByName", names(s), names(fresh)},
		{"Children", sets(s.Children), sets(fresh.Children)},
		{"AggregateIndex", sets(s.AggregateIndex), sets(fresh.AggregateIndex)},
		{"TraitIndex", sets(s.TraitIndex), sets(fresh.TraitIndex)},
		{"ProviderConsumers", sets(s.ProviderConsumers), sets(fresh.ProviderConsumers)},
		{"provider usages", providerUsages(s), providerUsages(fresh)},
		{"project usages", usages(s), usages(fresh)},
	} {
		if !reflect.DeepEqual(ix.got, ix.want) {
			return fmt.Errorf("index %s drifted:\n have %v\n want %v", ix.name, ix.got, ix.want)
		}
	}
	for p := range s.Providers.InOrder() {
		for class, used := range p.Usages {
			if used < 0 {
				return fmt.Errorf("provider %s: negative usage %d of %s", p.UUID, used, class)
			}
		}
	}
	return nil
}

// sets copies an index into Go maps (its trees' shapes depend on the
// order of the changes), dropping empty sets, which mean the same as
// absent ones.
func sets(ix state.Index) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for k, set := range ix.All() {
		if set.Len() == 0 {
			continue
		}
		c := map[string]bool{}
		for member := range set.All() {
			c[member] = true
		}
		out[k] = c
	}
	return out
}

func names(s *state.Store) map[string]string {
	out := map[string]string{}
	for name, uuid := range s.ProviderByName.All() {
		out[name] = uuid
	}
	return out
}

func nonZero(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func providerUsages(s *state.Store) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for p := range s.Providers.InOrder() {
		if used := nonZero(p.Usages); len(used) > 0 {
			out[p.UUID] = used
		}
	}
	return out
}

type totals struct {
	Consumers int
	Used      map[string]int64
}

func usages(s *state.Store) map[state.UsageKey]totals {
	out := map[state.UsageKey]totals{}
	for k, t := range s.Usage.All() {
		if t == nil || (t.Consumers == 0 && len(nonZero(t.Used)) == 0) {
			continue
		}
		out[k] = totals{t.Consumers, nonZero(t.Used)}
	}
	return out
}
