package state

import "slices"

// UsageGroup is the usage of the consumers of one type (Type "" is the
// unknown type) in a project, or a project and user.
type UsageGroup struct {
	Type      string
	Consumers int
	Used      map[string]int64
}

// ProjectUsage sums the allocations of a project's consumers (of one user
// when user is not ""), one group per consumer type that has any. It reads
// the project usage index: the cost is one lookup per consumer type,
// whatever the number of consumers. Groups are in type name order, the
// unknown type first.
func (s *Store) ProjectUsage(project, user string) []UsageGroup {
	types := make([]string, 0, s.ConsumerTypes.Len()+1)
	types = append(types, "")
	types = slices.AppendSeq(types, s.ConsumerTypes.Keys())
	var out []UsageGroup
	for _, t := range types {
		tot := s.Usage.Get(UsageKey{Project: project, User: user, Type: t})
		if tot == nil || tot.Consumers == 0 {
			continue
		}
		g := UsageGroup{Type: t, Consumers: tot.Consumers, Used: make(map[string]int64, len(tot.Used))}
		for class, used := range tot.Used {
			g.Used[class] = used
		}
		out = append(out, g)
	}
	return out
}

// ProviderUsage is GET /resource_providers/{uuid}/usages: the usage of
// every class the provider has inventory of, zero when unused.
func (p *Provider) ProviderUsage() map[string]int64 {
	out := make(map[string]int64, len(p.Inventories))
	for class := range p.Inventories {
		out[class] = p.Usages[class]
	}
	return out
}
