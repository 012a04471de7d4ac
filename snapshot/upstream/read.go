package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/snapshot/export"
)

// MinVersion is the oldest Placement a migration reads: consumer
// generations appear at 1.28. Consumer types need 1.38; an older source's
// consumers have none.
const MinVersion = 28

// newestRead is the microversion the reader uses when the source has it.
const newestRead = 39

// ReadOptions tune Read.
type ReadOptions struct {
	// Workers is how many requests are in flight at once (default 8).
	Workers int
	// Progress, when set, is told how the read goes.
	Progress func(format string, args ...any)
}

// providerJSON is a provider as GET /resource_providers shows it (1.14+).
type providerJSON struct {
	UUID       string  `json:"uuid"`
	Name       string  `json:"name"`
	Generation int64   `json:"generation"`
	Parent     *string `json:"parent_provider_uuid"`
	Root       string  `json:"root_provider_uuid"`
}

// ErrChanged says the source was written to while it was read: writes
// must be frozen for a migration.
var ErrChanged = errors.New("the source changed while it was read (freeze writes to it, see docs/migration.md)")

// Read reads the whole state the API shows into a document: custom
// resource classes (in listing order, which is their identifier order),
// custom traits, providers (identifiers in listing order, which is
// creation order) with generations, trees, inventories, traits and
// aggregates, and every consumer holding allocations, with its project,
// user, type and generation. It checks that what it read is consistent
// (generations, allocations seen from providers and from consumers) and
// fails with ErrChanged otherwise.
func Read(ctx context.Context, ep *Endpoint, opts ReadOptions) (*export.Document, error) {
	if opts.Workers == 0 {
		opts.Workers = 8
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	maxV, err := ep.MaxVersion(ctx)
	if err != nil {
		return nil, err
	}
	m := minor(maxV)
	if m < MinVersion {
		return nil, fmt.Errorf("%s serves microversions up to %s; a migration needs 1.%d or newer", ep.URL, maxV, MinVersion)
	}
	v := fmt.Sprintf("1.%d", min(m, newestRead))
	doc := export.New(ep.URL)
	doc.ExportedAt = time.Now().UTC()

	var classes struct {
		ResourceClasses []struct {
			Name string `json:"name"`
		} `json:"resource_classes"`
	}
	if err := ep.getJSON(ctx, "/resource_classes", v, &classes); err != nil {
		return nil, err
	}
	for _, rc := range classes.ResourceClasses {
		if strings.HasPrefix(rc.Name, "CUSTOM_") {
			doc.ResourceClasses = append(doc.ResourceClasses, export.ResourceClass{Name: rc.Name, ID: state.MinCustomClassID + len(doc.ResourceClasses)})
		}
	}
	var traits struct {
		Traits []string `json:"traits"`
	}
	if err := ep.getJSON(ctx, "/traits?name=startswith:CUSTOM_", v, &traits); err != nil {
		return nil, err
	}
	for _, t := range traits.Traits {
		doc.Traits = append(doc.Traits, export.Trait{Name: t})
	}

	var list struct {
		ResourceProviders []providerJSON `json:"resource_providers"`
	}
	if err := ep.getJSON(ctx, "/resource_providers", v, &list); err != nil {
		return nil, err
	}
	progress("%s (microversion %s): %d resource providers, %d custom resource classes, %d custom traits",
		ep.URL, v, len(list.ResourceProviders), len(doc.ResourceClasses), len(doc.Traits))

	n := len(list.ResourceProviders)
	doc.ResourceProviders = make([]export.ResourceProvider, n)
	provAllocs := make([]map[string]map[string]int64, n) // consumer -> class -> used
	var done progressCounter
	err = forEach(ctx, n, opts.Workers, func(ctx context.Context, i int) error {
		p := list.ResourceProviders[i]
		rp, allocs, err := readProvider(ctx, ep, v, p)
		if err != nil {
			return err
		}
		rp.ID = int64(i + 1)
		doc.ResourceProviders[i], provAllocs[i] = rp, allocs
		done.step(n, func(k int) { progress("read %d/%d resource providers", k, n) })
		return nil
	})
	if err != nil {
		return nil, err
	}

	// Every consumer with an allocation shows on some provider; what the
	// providers said is checked against the consumer's own view.
	fromProviders := map[string][]export.Allocation{}
	for i, byConsumer := range provAllocs {
		for c, resources := range byConsumer {
			for class, used := range resources {
				fromProviders[c] = append(fromProviders[c], export.Allocation{
					ResourceProviderUUID: doc.ResourceProviders[i].UUID, ResourceClass: class, Used: used})
			}
		}
	}
	consumers := state.SortedKeys(fromProviders)
	doc.Consumers = make([]export.Consumer, len(consumers))
	progress("reading %d consumers", len(consumers))
	done = progressCounter{}
	err = forEach(ctx, len(consumers), opts.Workers, func(ctx context.Context, i int) error {
		c, err := readConsumer(ctx, ep, v, consumers[i])
		if err != nil {
			return err
		}
		if !sameAllocations(c.Allocations, fromProviders[c.UUID]) {
			return fmt.Errorf("%w: the allocations of consumer %s differ between its providers' view and its own", ErrChanged, c.UUID)
		}
		doc.Consumers[i] = c
		done.step(len(consumers), func(k int) { progress("read %d/%d consumers", k, len(consumers)) })
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Consumer types are not listed by the API: those of the consumers
	// are all that is visible.
	types := map[string]bool{}
	for _, c := range doc.Consumers {
		if c.ConsumerType != "" {
			types[c.ConsumerType] = true
		}
	}
	for i, t := range state.SortedKeys(types) {
		doc.ConsumerTypes = append(doc.ConsumerTypes, export.ConsumerType{Name: t, ID: i + 1})
	}
	progress("read %d resource providers, %d consumers with %d allocations", n, len(doc.Consumers), doc.Allocations())
	return doc, nil
}

// readProvider reads one provider's inventories, traits, aggregates and
// allocations, all at the generation the listing showed; when the
// provider changes meanwhile it is read again, a few times.
func readProvider(ctx context.Context, ep *Endpoint, v string, p providerJSON) (export.ResourceProvider, map[string]map[string]int64, error) {
	base := "/resource_providers/" + escape(p.UUID)
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := ep.getJSON(ctx, base, v, &p); err != nil {
				return export.ResourceProvider{}, nil, changedIfGone(err, "resource provider "+p.UUID)
			}
		}
		rp := export.ResourceProvider{UUID: p.UUID, Name: p.Name, Generation: p.Generation, RootProviderUUID: p.Root,
			Inventories: map[string]export.Inventory{}}
		if p.Parent != nil {
			rp.ParentProviderUUID = *p.Parent
		}
		var inv struct {
			Inventories map[string]export.Inventory `json:"inventories"`
			Generation  int64                       `json:"resource_provider_generation"`
		}
		var traits struct {
			Traits     []string `json:"traits"`
			Generation int64    `json:"resource_provider_generation"`
		}
		var aggs struct {
			Aggregates []string `json:"aggregates"`
			Generation int64    `json:"resource_provider_generation"`
		}
		var allocs struct {
			Allocations map[string]struct {
				Resources map[string]int64 `json:"resources"`
			} `json:"allocations"`
			Generation int64 `json:"resource_provider_generation"`
		}
		for _, get := range []struct {
			path string
			dst  any
		}{{"/inventories", &inv}, {"/traits", &traits}, {"/aggregates", &aggs}, {"/allocations", &allocs}} {
			if err := ep.getJSON(ctx, base+get.path, v, get.dst); err != nil {
				return rp, nil, changedIfGone(err, "resource provider "+p.UUID)
			}
		}
		if inv.Generation != p.Generation || traits.Generation != p.Generation ||
			aggs.Generation != p.Generation || allocs.Generation != p.Generation {
			if attempt < 3 {
				continue
			}
			return rp, nil, fmt.Errorf("%w: resource provider %s keeps changing", ErrChanged, p.UUID)
		}
		if inv.Inventories != nil {
			rp.Inventories = inv.Inventories
		}
		rp.Traits, rp.Aggregates = nonNil(traits.Traits), nonNil(aggs.Aggregates)
		out := make(map[string]map[string]int64, len(allocs.Allocations))
		for c, a := range allocs.Allocations {
			out[c] = a.Resources
		}
		return rp, out, nil
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func changedIfGone(err error, what string) error {
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		return fmt.Errorf("%w: %s disappeared", ErrChanged, what)
	}
	return err
}

// readConsumer reads GET /allocations/{consumer}.
func readConsumer(ctx context.Context, ep *Endpoint, v, uuid string) (export.Consumer, error) {
	var body struct {
		Allocations map[string]struct {
			Resources map[string]int64 `json:"resources"`
		} `json:"allocations"`
		ProjectID          string `json:"project_id"`
		UserID             string `json:"user_id"`
		ConsumerGeneration *int64 `json:"consumer_generation"`
		ConsumerType       string `json:"consumer_type"`
	}
	if err := ep.getJSON(ctx, "/allocations/"+escape(uuid), v, &body); err != nil {
		return export.Consumer{}, err
	}
	if len(body.Allocations) == 0 || body.ConsumerGeneration == nil {
		return export.Consumer{}, fmt.Errorf("%w: consumer %s has no allocations any more", ErrChanged, uuid)
	}
	c := export.Consumer{UUID: uuid, ProjectID: body.ProjectID, UserID: body.UserID, Generation: *body.ConsumerGeneration,
		Allocations: []export.Allocation{}}
	if body.ConsumerType != state.UnknownConsumerType {
		c.ConsumerType = body.ConsumerType
	}
	for _, rp := range state.SortedKeys(body.Allocations) {
		res := body.Allocations[rp].Resources
		for _, class := range state.SortedKeys(res) {
			c.Allocations = append(c.Allocations, export.Allocation{ResourceProviderUUID: rp, ResourceClass: class, Used: res[class]})
		}
	}
	return c, nil
}

func sameAllocations(a, b []export.Allocation) bool {
	if len(a) != len(b) {
		return false
	}
	key := func(x export.Allocation) string { return x.ResourceProviderUUID + " " + x.ResourceClass }
	sort.Slice(a, func(i, j int) bool { return key(a[i]) < key(a[j]) })
	sort.Slice(b, func(i, j int) bool { return key(b[i]) < key(b[j]) })
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// progressCounter reports about every tenth of a long task.
type progressCounter struct {
	mu sync.Mutex
	n  int
}

func (p *progressCounter) step(total int, report func(done int)) {
	p.mu.Lock()
	p.n++
	k := p.n
	p.mu.Unlock()
	if every := max(total/10, 100); k%every == 0 || k == total {
		report(k)
	}
}
