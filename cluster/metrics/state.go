package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
)

// stateCollector counts what the placement state holds. It holds the read
// lock only for map lengths and one pass over the consumers (allocations
// are stored per consumer), so a scrape does not hold up writes noticeably.
type stateCollector struct {
	fsm                                                            *fsm.FSM
	providers, consumers, allocations, classes, traits, aggregates *prometheus.Desc
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.providers, c.consumers, c.allocations, c.classes, c.traits, c.aggregates} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	var providers, consumers, allocations, classes, traits, aggregates int
	c.fsm.Read(func(s *state.Store) {
		providers, consumers = s.Providers.Len(), s.Consumers.Len()
		classes, traits, aggregates = s.Classes.Len(), s.Traits.Len(), s.AggregateIndex.Len()
		for cons := range s.Consumers.Values() {
			allocations += len(cons.Allocations)
		}
	})
	for d, v := range map[*prometheus.Desc]int{
		c.providers: providers, c.consumers: consumers, c.allocations: allocations,
		c.classes: classes, c.traits: traits, c.aggregates: aggregates,
	} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
}
