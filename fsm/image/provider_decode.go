package image

import (
	"encoding/json"
	"strconv"

	"github.com/placementd/placementd/fsm/state"
)

// decoder decodes the elements of an image's Providers (provider) and
// Consumers (consumer): the exact shape encodeImage writes is parsed
// directly, anything else goes to json.Unmarshal. A large cloud's
// providers carry dozens of traits each, the same few names over and
// over, and its million consumers the same projects, users, classes and
// provider uuids; names holds one copy of each name read (not of consumer
// uuids, each read once), so that decoding does not allocate a string per
// occurrence, and an allocation's provider uuid is its provider's string.
type decoder struct {
	names map[string]string
}

func (d *decoder) provider(raw []byte) (state.ProviderImage, error) {
	if p, ok := d.parseProvider(raw); ok {
		return p, nil
	}
	var p state.ProviderImage
	err := json.Unmarshal(raw, &p)
	return p, err
}

// name returns the shared copy of b's text.
func (d *decoder) name(b []byte) string {
	if s, ok := d.names[string(b)]; ok {
		return s
	}
	if d.names == nil {
		d.names = map[string]string{}
	}
	s := string(b)
	d.names[s] = s
	return s
}

// parse is the direct parse; ok is false when raw is not in the shape
// encodeImage writes.
func (d *decoder) parseProvider(raw []byte) (pi state.ProviderImage, ok bool) {
	p := parser{b: raw}
	ok = p.lit(`{"ID":`) && p.int(&pi.ID) &&
		p.lit(`,"UUID":`) && p.name(&pi.UUID, d) &&
		p.lit(`,"Name":`) && p.str(&pi.Name) &&
		p.lit(`,"Generation":`) && p.int(&pi.Generation) &&
		(!p.lit(`,"ParentUUID":`) || p.name(&pi.ParentUUID, d)) &&
		p.lit(`,"RootUUID":`) && p.name(&pi.RootUUID, d) &&
		p.lit(`,"Created":`) && p.time(&pi.Created) &&
		p.lit(`,"Updated":`) && p.time(&pi.Updated) &&
		p.lit(`,"Inventories":`)
	if !ok {
		return pi, false
	}
	if !p.lit("null") {
		if !p.lit("[") {
			return pi, false
		}
		pi.Inventories = []state.InventoryImage{}
		for i := 0; !p.lit("]"); i++ {
			var ii state.InventoryImage
			var class []byte
			if !((i == 0 || p.lit(",")) &&
				p.lit(`{"Class":`) && p.rawString(&class) &&
				p.lit(`,"Total":`) && p.int(&ii.Total) &&
				p.lit(`,"Reserved":`) && p.int(&ii.Reserved) &&
				p.lit(`,"MinUnit":`) && p.int(&ii.MinUnit) &&
				p.lit(`,"MaxUnit":`) && p.int(&ii.MaxUnit) &&
				p.lit(`,"StepSize":`) && p.int(&ii.StepSize) &&
				p.lit(`,"AllocationRatio":`) && p.float(&ii.AllocationRatio) &&
				p.lit(`,"Created":`) && p.time(&ii.Created) &&
				p.lit(`,"Updated":`) && p.time(&ii.Updated) && p.lit("}")) {
				return pi, false
			}
			ii.Class = d.name(class)
			pi.Inventories = append(pi.Inventories, ii)
		}
	}
	names := func(key string, dst *[]string) bool {
		if !p.lit(key) {
			return true // omitted when empty
		}
		if !p.lit("[") {
			return false
		}
		*dst = []string{}
		for i := 0; !p.lit("]"); i++ {
			var b []byte
			if !((i == 0 || p.lit(",")) && p.rawString(&b)) {
				return false
			}
			*dst = append(*dst, d.name(b))
		}
		return true
	}
	ok = names(`,"Traits":`, &pi.Traits) && names(`,"Aggregates":`, &pi.Aggregates) &&
		p.lit("}") && p.i == len(p.b)
	return pi, ok
}

// name reads a string as parser.str does, as d's shared copy.
func (p *parser) name(dst *string, d *decoder) bool {
	s, ok := p.span()
	if ok {
		*dst = d.name(s)
	}
	return ok
}

// rawString reads a JSON string as parser.span does, without copying it.
func (p *parser) rawString(dst *[]byte) bool {
	s, ok := p.span()
	*dst = s
	return ok
}

// float reads a number in JSON's grammar (what encoding/json writes a
// float64 as) and parses it as encoding/json does.
func (p *parser) float(dst *float64) bool {
	j := p.i
	digits := func() bool {
		start := j
		for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
			j++
		}
		return j > start
	}
	if j < len(p.b) && p.b[j] == '-' {
		j++
	}
	intStart := j
	if !digits() || p.b[intStart] == '0' && j-intStart > 1 {
		return false
	}
	if j < len(p.b) && p.b[j] == '.' {
		j++
		if !digits() {
			return false
		}
	}
	if j < len(p.b) && (p.b[j] == 'e' || p.b[j] == 'E') {
		j++
		if j < len(p.b) && (p.b[j] == '+' || p.b[j] == '-') {
			j++
		}
		if !digits() {
			return false
		}
	}
	f, err := strconv.ParseFloat(string(p.b[p.i:j]), 64)
	if err != nil {
		return false
	}
	*dst, p.i = f, j
	return true
}
