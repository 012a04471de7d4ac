package export

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/placementd/placementd/fsm/state"
)

// FormatName and Version identify the document. A reader accepts every
// version up to Version and refuses newer ones.
const (
	FormatName = "placementd-export"
	Version    = 1
)

// Document is the whole state.
type Document struct {
	Format     string    `json:"format"`
	Version    int       `json:"version"`
	ExportedAt time.Time `json:"exported_at,omitzero"`
	// Source says where the state was read ("placementd", or an upstream
	// Placement's URL); informational.
	Source            string             `json:"source,omitempty"`
	ResourceClasses   []ResourceClass    `json:"resource_classes"`
	Traits            []Trait            `json:"traits"`
	ConsumerTypes     []ConsumerType     `json:"consumer_types"`
	ResourceProviders []ResourceProvider `json:"resource_providers"`
	Consumers         []Consumer         `json:"consumers"`
	Counters          *Counters          `json:"counters,omitempty"`
}

// ResourceClass is a custom resource class (standard ones are not listed).
type ResourceClass struct {
	Name      string    `json:"name"`
	ID        int       `json:"id,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Trait is a custom trait (standard ones are not listed).
type Trait struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// ConsumerType is a consumer type ever used.
type ConsumerType struct {
	Name      string    `json:"name"`
	ID        int       `json:"id,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// ResourceProvider is a provider with its inventories, traits and
// aggregates. ID is its creation order, the order listings use.
type ResourceProvider struct {
	UUID               string               `json:"uuid"`
	Name               string               `json:"name"`
	ID                 int64                `json:"id,omitempty"`
	Generation         int64                `json:"generation"`
	ParentProviderUUID string               `json:"parent_provider_uuid,omitempty"`
	RootProviderUUID   string               `json:"root_provider_uuid,omitempty"`
	CreatedAt          time.Time            `json:"created_at,omitzero"`
	UpdatedAt          time.Time            `json:"updated_at,omitzero"`
	Inventories        map[string]Inventory `json:"inventories"`
	Traits             []string             `json:"traits"`
	Aggregates         []string             `json:"aggregates"`
}

// Inventory is one resource class's inventory, with Placement's fields.
type Inventory struct {
	Total           int64     `json:"total"`
	Reserved        int64     `json:"reserved"`
	MinUnit         int64     `json:"min_unit"`
	MaxUnit         int64     `json:"max_unit"`
	StepSize        int64     `json:"step_size"`
	AllocationRatio float64   `json:"allocation_ratio"`
	CreatedAt       time.Time `json:"created_at,omitzero"`
	UpdatedAt       time.Time `json:"updated_at,omitzero"`
}

// Consumer owns allocations. An empty ConsumerType is the unknown type.
type Consumer struct {
	UUID         string       `json:"uuid"`
	ProjectID    string       `json:"project_id"`
	UserID       string       `json:"user_id"`
	ConsumerType string       `json:"consumer_type,omitempty"`
	Generation   int64        `json:"generation"`
	CreatedAt    time.Time    `json:"created_at,omitzero"`
	UpdatedAt    time.Time    `json:"updated_at,omitzero"`
	Allocations  []Allocation `json:"allocations"`
}

// Allocation is an amount of one class a consumer holds on one provider.
type Allocation struct {
	ResourceProviderUUID string    `json:"resource_provider_uuid"`
	ResourceClass        string    `json:"resource_class"`
	Used                 int64     `json:"used"`
	CreatedAt            time.Time `json:"created_at,omitzero"`
	UpdatedAt            time.Time `json:"updated_at,omitzero"`
}

// Counters are the identifiers placementd gives next; they run ahead of
// the largest identifier in use when objects were deleted.
type Counters struct {
	NextProviderID      int64 `json:"next_resource_provider_id"`
	NextResourceClassID int   `json:"next_resource_class_id"`
	NextConsumerTypeID  int   `json:"next_consumer_type_id"`
}

// New returns an empty document of the current version.
func New(source string) *Document {
	return &Document{Format: FormatName, Version: Version, Source: source,
		ResourceClasses: []ResourceClass{}, Traits: []Trait{}, ConsumerTypes: []ConsumerType{},
		ResourceProviders: []ResourceProvider{}, Consumers: []Consumer{}}
}

// Write writes the document as indented JSON.
func Write(w io.Writer, d *Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// Read reads a document, refusing other formats, newer versions and
// unknown fields (a misspelt field in a hand-edited file would otherwise
// be dropped silently).
func Read(r io.Reader) (*Document, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var d Document
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("export document: %w", err)
	}
	if d.Format != FormatName {
		return nil, fmt.Errorf("export document: format is %q, not %q", d.Format, FormatName)
	}
	if d.Version < 1 || d.Version > Version {
		return nil, fmt.Errorf("export document: version %d is not understood by this build (1 to %d)", d.Version, Version)
	}
	return &d, nil
}

// FromImage turns a placementd state into a document, every identifier,
// generation and time included.
func FromImage(img *state.Image) *Document {
	d := New("placementd")
	d.Counters = &Counters{NextProviderID: img.NextProviderID, NextResourceClassID: img.NextClassID, NextConsumerTypeID: img.NextConsumerTypeID}
	for _, rc := range img.CustomClasses {
		d.ResourceClasses = append(d.ResourceClasses, ResourceClass{Name: rc.Name, ID: rc.ID, CreatedAt: rc.Created, UpdatedAt: rc.Updated})
	}
	for _, t := range img.CustomTraits {
		d.Traits = append(d.Traits, Trait{Name: t.Name, CreatedAt: t.Created, UpdatedAt: t.Updated})
	}
	for _, ct := range img.ConsumerTypes {
		d.ConsumerTypes = append(d.ConsumerTypes, ConsumerType{Name: ct.Name, ID: ct.ID, CreatedAt: ct.Created, UpdatedAt: ct.Updated})
	}
	for _, p := range img.Providers {
		rp := ResourceProvider{
			UUID: p.UUID, Name: p.Name, ID: p.ID, Generation: p.Generation,
			ParentProviderUUID: p.ParentUUID, RootProviderUUID: p.RootUUID,
			CreatedAt: p.Created, UpdatedAt: p.Updated,
			Inventories: map[string]Inventory{},
			Traits:      append([]string{}, p.Traits...), Aggregates: append([]string{}, p.Aggregates...),
		}
		for _, ii := range p.Inventories {
			inv := ii.Inventory
			rp.Inventories[ii.Class] = Inventory{Total: inv.Total, Reserved: inv.Reserved, MinUnit: inv.MinUnit,
				MaxUnit: inv.MaxUnit, StepSize: inv.StepSize, AllocationRatio: inv.AllocationRatio,
				CreatedAt: inv.Created, UpdatedAt: inv.Updated}
		}
		d.ResourceProviders = append(d.ResourceProviders, rp)
	}
	for _, ci := range img.Consumers {
		c := Consumer{UUID: ci.UUID, ProjectID: ci.ProjectID, UserID: ci.UserID, ConsumerType: ci.Type,
			Generation: ci.Generation, CreatedAt: ci.Created, UpdatedAt: ci.Updated, Allocations: []Allocation{}}
		for _, a := range ci.Allocations {
			c.Allocations = append(c.Allocations, Allocation{ResourceProviderUUID: a.ProviderUUID, ResourceClass: a.Class,
				Used: a.Used, CreatedAt: ci.Updated})
		}
		d.Consumers = append(d.Consumers, c)
	}
	return d
}

// Summary counts the document's objects.
func (d *Document) Summary() state.Contents {
	return state.Contents{Providers: len(d.ResourceProviders), CustomClasses: len(d.ResourceClasses),
		CustomTraits: len(d.Traits), ConsumerTypes: len(d.ConsumerTypes), Consumers: len(d.Consumers)}
}

// Allocations counts the allocations of every consumer.
func (d *Document) Allocations() int {
	n := 0
	for _, c := range d.Consumers {
		n += len(c.Allocations)
	}
	return n
}

func providerImage(rp *ResourceProvider) state.ProviderImage {
	p := state.ProviderImage{
		ID: rp.ID, UUID: rp.UUID, Name: rp.Name, Generation: rp.Generation,
		ParentUUID: rp.ParentProviderUUID, RootUUID: rp.RootProviderUUID,
		Created: rp.CreatedAt, Updated: rp.UpdatedAt,
		Traits: sortedCopy(rp.Traits), Aggregates: sortedCopy(rp.Aggregates),
	}
	for _, class := range state.SortedKeys(rp.Inventories) {
		inv := rp.Inventories[class]
		p.Inventories = append(p.Inventories, state.InventoryImage{Class: class, Inventory: state.Inventory{
			Total: inv.Total, Reserved: inv.Reserved, MinUnit: inv.MinUnit, MaxUnit: inv.MaxUnit,
			StepSize: inv.StepSize, AllocationRatio: inv.AllocationRatio, Created: inv.CreatedAt, Updated: inv.UpdatedAt,
		}})
	}
	return p
}

func consumerImage(c *Consumer) state.ConsumerImage {
	ci := state.ConsumerImage{Consumer: state.Consumer{
		UUID: c.UUID, ProjectID: c.ProjectID, UserID: c.UserID, Type: c.ConsumerType,
		Generation: c.Generation, Created: c.CreatedAt, Updated: c.UpdatedAt,
	}}
	for _, a := range c.Allocations {
		ci.Allocations = append(ci.Allocations, state.Allocation{ProviderUUID: a.ResourceProviderUUID,
			Class: a.ResourceClass, Used: a.Used})
	}
	return ci
}

func sortedCopy(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}

// Chunks splits the document into import commands of roughly at most
// maxBytes of JSON each (one object bigger than that gets a chunk of its
// own): the custom classes, traits and consumer types first, then the
// providers a tree at a time (a tree is never split, so every parent is
// loaded with or before its children), then the consumers. The first
// chunk carries First (and replace), the last the counters. The number
// of chunks is about the document's size over maxBytes.
func Chunks(d *Document, maxBytes int, replace bool) ([]*state.ImportChunk, error) {
	cur := &state.ImportChunk{First: true, Replace: replace}
	chunks := []*state.ImportChunk{cur}
	size := 0
	// room starts a new chunk when n more bytes would not fit.
	room := func(n int) {
		if size > 0 && size+n > maxBytes {
			cur = &state.ImportChunk{}
			chunks = append(chunks, cur)
			size = 0
		}
		size += n
	}
	for _, rc := range d.ResourceClasses {
		cur.CustomClasses = append(cur.CustomClasses, state.ResourceClass{ID: rc.ID, Name: rc.Name, Created: rc.CreatedAt, Updated: rc.UpdatedAt})
		size += 100
	}
	for _, t := range d.Traits {
		cur.CustomTraits = append(cur.CustomTraits, state.Trait{Name: t.Name, Created: t.CreatedAt, Updated: t.UpdatedAt})
		size += 100
	}
	for _, ct := range d.ConsumerTypes {
		cur.ConsumerTypes = append(cur.ConsumerTypes, state.ConsumerType{ID: ct.ID, Name: ct.Name, Created: ct.CreatedAt, Updated: ct.UpdatedAt})
		size += 100
	}
	trees, err := providerTrees(d.ResourceProviders)
	if err != nil {
		return nil, err
	}
	for _, tree := range trees {
		var imgs []state.ProviderImage
		n := 0
		for _, rp := range tree {
			pi := providerImage(rp)
			b, _ := json.Marshal(pi)
			n += len(b)
			imgs = append(imgs, pi)
		}
		room(n)
		cur.Providers = append(cur.Providers, imgs...)
	}
	for i := range d.Consumers {
		ci := consumerImage(&d.Consumers[i])
		b, _ := json.Marshal(ci)
		room(len(b))
		cur.Consumers = append(cur.Consumers, ci)
	}
	if c := d.Counters; c != nil {
		cur.NextProviderID, cur.NextClassID, cur.NextConsumerTypeID = c.NextProviderID, c.NextResourceClassID, c.NextConsumerTypeID
	}
	return chunks, nil
}

// providerTrees groups providers by tree, parents before children, trees
// in document order of their roots. A parent missing from the document or
// a loop is an error.
func providerTrees(rps []ResourceProvider) ([][]*ResourceProvider, error) {
	byUUID := make(map[string]*ResourceProvider, len(rps))
	children := map[string][]*ResourceProvider{}
	var roots []*ResourceProvider
	for i := range rps {
		rp := &rps[i]
		if byUUID[rp.UUID] != nil {
			return nil, fmt.Errorf("resource provider %s is listed twice", rp.UUID)
		}
		byUUID[rp.UUID] = rp
	}
	for i := range rps {
		rp := &rps[i]
		if rp.ParentProviderUUID == "" {
			roots = append(roots, rp)
			continue
		}
		if byUUID[rp.ParentProviderUUID] == nil {
			return nil, fmt.Errorf("resource provider %s: parent %s is not in the document", rp.UUID, rp.ParentProviderUUID)
		}
		children[rp.ParentProviderUUID] = append(children[rp.ParentProviderUUID], rp)
	}
	var out [][]*ResourceProvider
	placed := 0
	for _, root := range roots {
		tree := []*ResourceProvider{root}
		for i := 0; i < len(tree); i++ {
			tree = append(tree, children[tree[i].UUID]...)
		}
		placed += len(tree)
		out = append(out, tree)
	}
	if placed != len(rps) {
		return nil, fmt.Errorf("%d resource providers are in parent loops", len(rps)-placed)
	}
	return out, nil
}

// Load builds a placementd state from the document alone, by applying its
// import chunks to an empty state as a cluster would (at time at, which
// fills the times the document leaves out). It checks a document before
// an import, and tells the state an import will produce.
func Load(d *Document, at time.Time) (*state.Store, error) {
	chunks, err := Chunks(d, 1<<20, false)
	if err != nil {
		return nil, err
	}
	s := state.New()
	for _, c := range chunks {
		if _, err := c.Apply(s, state.Meta{Time: at}); err != nil {
			return nil, err
		}
	}
	return s, nil
}
