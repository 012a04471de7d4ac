package state

import (
	"fmt"
	"sync"
	"testing"
)

// The usage benchmark's store: 1,000,000 consumers over 10,000 projects
// (100 consumers each, 4 users per project, 3 consumer types plus
// unknown), each holding VCPU and MEMORY_MB on one of 100 providers. It is
// built through SetAllocations, so the usage index is the real one.
const (
	benchConsumers = 1_000_000
	benchProjects  = 10_000
	benchProviders = 100
)

var (
	benchOnce  sync.Once
	benchStore *Store
)

func benchUsageStore(b *testing.B) *Store {
	benchOnce.Do(func() {
		s := New()
		m := Meta{Time: alT0}
		for i := 0; i < benchProviders; i++ {
			u := fmt.Sprintf("rp-%d", i)
			mustBench(b, s, &CreateProvider{UUID: u, Name: u}, m)
			big := []InventoryValues{alInv("VCPU", 1<<30), alInv("MEMORY_MB", 1<<30)}
			mustBench(b, s, &SetInventories{Provider: u, Generation: 0, Inventories: big}, m)
		}
		types := []string{"", "INSTANCE", "MIGRATION", "BAREMETAL"}
		const batch = 1000
		for start := 0; start < benchConsumers; start += batch {
			cmd := &SetAllocations{Post: true}
			for i := start; i < start+batch; i++ {
				project := i % benchProjects
				rp := fmt.Sprintf("rp-%d", i%benchProviders)
				cmd.Consumers = append(cmd.Consumers, ConsumerAllocations{
					Consumer:     fmt.Sprintf("consumer-%07d", i),
					ProjectID:    fmt.Sprintf("project-%05d", project),
					UserID:       fmt.Sprintf("user-%05d-%d", project, (i/benchProjects)%4),
					ConsumerType: types[(i/benchProjects)%len(types)],
					Allocations: []AllocationRequest{
						{Provider: rp, Class: "VCPU", Used: 1},
						{Provider: rp, Class: "MEMORY_MB", Used: 512},
					},
				})
			}
			mustBench(b, s, cmd, m)
		}
		benchStore = s
	})
	return benchStore
}

func mustBench(b *testing.B, s *Store, cmd Command, m Meta) {
	if _, err := cmd.Apply(s, m); err != nil {
		b.Fatalf("%s: %v", cmd.Kind(), err)
	}
}

// BenchmarkProjectUsage is GET /usages?project_id= in the store: the
// query plus summing the groups as the handler does.
func BenchmarkProjectUsage(b *testing.B) {
	s := benchUsageStore(b)
	if s.Consumers.Len() != benchConsumers {
		b.Fatalf("%d consumers", s.Consumers.Len())
	}
	// Every project has 100 consumers: 100 VCPU, 51200 MEMORY_MB.
	check := func(project string) {
		var consumers int
		var vcpu, mem int64
		for _, g := range s.ProjectUsage(project, "") {
			consumers += g.Consumers
			vcpu += g.Used["VCPU"]
			mem += g.Used["MEMORY_MB"]
		}
		if consumers != 100 || vcpu != 100 || mem != 51200 {
			b.Fatalf("%s: %d consumers, %d VCPU, %d MEMORY_MB", project, consumers, vcpu, mem)
		}
	}
	check("project-00042")
	projects := make([]string, benchProjects)
	for i := range projects {
		projects[i] = fmt.Sprintf("project-%05d", i)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		total := map[string]int64{}
		for _, g := range s.ProjectUsage(projects[i%benchProjects], "") {
			for class, used := range g.Used {
				total[class] += used
			}
		}
		if len(total) != 2 {
			b.Fatal("wrong usage")
		}
	}
}

// BenchmarkProjectUserUsage is GET /usages?project_id=&user_id=.
func BenchmarkProjectUserUsage(b *testing.B) {
	s := benchUsageStore(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := i % benchProjects
		if len(s.ProjectUsage(fmt.Sprintf("project-%05d", p), fmt.Sprintf("user-%05d-%d", p, i%4))) == 0 {
			b.Fatal("no usage")
		}
	}
}

func TestProjectUsageReadsOnlyTheIndex(t *testing.T) {
	// A consumer of another project, or of another user, never shows up.
	s := New()
	alProvider(t, s, "rp1", "", alInv("VCPU", 100))
	a := alClaim("a", "rp1", "VCPU", 1)
	b := alClaim("b", "rp1", "VCPU", 2)
	b.ProjectID = "other"
	c := alClaim("c", "rp1", "VCPU", 4)
	c.UserID = "u2"
	alMust(t, s, &SetAllocations{Post: true, Consumers: []ConsumerAllocations{a, b, c}})
	if g := s.ProjectUsage("proj", ""); len(g) != 1 || g[0].Consumers != 2 || g[0].Used["VCPU"] != 5 {
		t.Fatalf("project usage = %+v", g)
	}
	if g := s.ProjectUsage("proj", "u2"); len(g) != 1 || g[0].Consumers != 1 || g[0].Used["VCPU"] != 4 {
		t.Fatalf("user usage = %+v", g)
	}
	if g := s.ProjectUsage("nobody", ""); len(g) != 0 {
		t.Fatalf("unknown project usage = %+v", g)
	}
}
