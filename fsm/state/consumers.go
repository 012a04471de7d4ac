package state

import (
	"fmt"
	"sort"
	"time"
)

// Consumers are created by the first write of their allocations and
// removed with their last allocation (upstream's
// delete_consumers_if_no_allocations). Consumer types are created on first
// use and kept forever.

// ConsumerCopy returns a deep copy of a consumer, or nil if it does not
// exist.
func (s *Store) ConsumerCopy(uuid string) *Consumer {
	c := s.Consumers.Get(uuid)
	if c == nil {
		return nil
	}
	cp := *c
	cp.Allocations = append([]Allocation(nil), c.Allocations...)
	return &cp
}

// ProviderAllocation is one allocation against a provider with its
// consumer's generation, as GET /resource_providers/{uuid}/allocations shows
// it.
type ProviderAllocation struct {
	ConsumerUUID       string
	ConsumerGeneration int64
	// Written is when the consumer's allocations were last written.
	Written time.Time
	Allocation
}

// ProviderAllocations lists the allocations against a provider, by
// consumer uuid then class. It reads the provider->consumers index, not
// every consumer.
func (s *Store) ProviderAllocations(providerUUID string) []ProviderAllocation {
	var out []ProviderAllocation
	for cu := range s.ProviderConsumers.Get(providerUUID).All() {
		c := s.Consumers.Get(cu)
		if c == nil {
			continue
		}
		for _, a := range c.Allocations {
			if a.ProviderUUID == providerUUID {
				out = append(out, ProviderAllocation{ConsumerUUID: c.UUID, ConsumerGeneration: c.Generation, Written: c.Updated, Allocation: a})
			}
		}
	}
	return out
}

// ensureConsumerType creates a consumer type on first use.
func (s *Store) ensureConsumerType(name string, m Meta) {
	if name == "" || s.ConsumerTypes.Get(name) != nil {
		return
	}
	s.ConsumerTypes = s.ConsumerTypes.set(name, &ConsumerType{ID: s.NextConsumerTypeID, Name: name, Created: m.Time})
	s.NextConsumerTypeID++
}

// sortAllocations puts a consumer's allocations in provider creation
// order, then class name: the order of consumers written without
// SetAllocations.WriteOrder, and of imported ones.
func (s *Store) sortAllocations(allocs []Allocation) {
	sort.SliceStable(allocs, func(i, j int) bool {
		pi, pj := s.Providers.Get(allocs[i].ProviderUUID), s.Providers.Get(allocs[j].ProviderUUID)
		if pi.ID != pj.ID {
			return pi.ID < pj.ID
		}
		return allocs[i].Class < allocs[j].Class
	})
}

// consumerGenerationConflict is upstream's ensure_consumer message. got is
// nil for a JSON null (Python's None).
func consumerGenerationConflict(existing *Consumer, got *int64) *Error {
	gotText := "None"
	if got != nil {
		gotText = fmt.Sprint(*got)
	}
	if existing == nil {
		return Conflictf(CodeConcurrentUpdate, "consumer generation conflict - expected null but got %s", gotText)
	}
	return Conflictf(CodeConcurrentUpdate, "consumer generation conflict - expected %d but got %s", existing.Generation, gotText)
}
