package image

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/placementd/placementd/fsm/state"
)

// consumer decodes one element of an image's Consumers. Restoring a
// snapshot is mostly decoding consumers (a million of them in a large
// cloud, each restart and each snapshot install on a follower), and
// encoding/json's reflection costs several times a direct parse. So the
// exact shape encodeImage writes (compact, fields in order, strings without
// escapes) is parsed directly; anything else, including every malformed
// input, goes to json.Unmarshal, which decides as it always has.
func (d *decoder) consumer(raw []byte) (*state.Consumer, error) {
	if c, ok := d.parseConsumer(raw); ok {
		return &c.Consumer, nil
	}
	var c *state.Consumer
	err := json.Unmarshal(raw, &c)
	return c, err
}

// parseConsumer is the direct parse; ok is false when raw is not in the
// shape encodeImage writes.
func (d *decoder) parseConsumer(raw []byte) (c state.ConsumerImage, ok bool) {
	p := parser{b: raw}
	ok = p.lit(`{"UUID":`) && p.str(&c.UUID) &&
		p.lit(`,"ProjectID":`) && p.name(&c.ProjectID, d) &&
		p.lit(`,"UserID":`) && p.name(&c.UserID, d) &&
		p.lit(`,"Type":`) && p.name(&c.Type, d) &&
		p.lit(`,"Generation":`) && p.int(&c.Generation) &&
		p.lit(`,"Created":`) && p.time(&c.Created) &&
		p.lit(`,"Updated":`) && p.time(&c.Updated) &&
		p.lit(`,"Allocations":`)
	if !ok {
		return c, false
	}
	if !p.lit("null") {
		if !p.lit("[") {
			return c, false
		}
		// Collected aside, then copied to a slice of the exact size the
		// store keeps.
		var scratch [8]state.Allocation
		allocs := scratch[:0]
		for i := 0; !p.lit("]"); i++ {
			if i > 0 && !p.lit(",") {
				return c, false
			}
			var a state.Allocation
			if !(p.lit(`{"ProviderUUID":`) && p.name(&a.ProviderUUID, d) &&
				p.lit(`,"Class":`) && p.name(&a.Class, d) &&
				p.lit(`,"Used":`) && p.int(&a.Used) &&
				p.allocationTimes() && p.lit("}")) {
				return c, false
			}
			allocs = append(allocs, a)
		}
		c.Allocations = append([]state.Allocation{}, allocs...)
	}
	return c, p.lit("}") && p.i == len(p.b)
}

// allocationTimes skips the per-allocation times snapshots written before
// allocations lost their own (the consumer's Updated stands for them).
func (p *parser) allocationTimes() bool {
	if !p.lit(`,"Created":`) {
		return true
	}
	var t time.Time
	return p.time(&t) && p.lit(`,"Updated":`) && p.time(&t)
}

// parser reads raw from position i; each method consumes what it reads
// and reports whether it found it.
type parser struct {
	b []byte
	i int
}

func (p *parser) lit(s string) bool {
	if !bytes.HasPrefix(p.b[p.i:], []byte(s)) {
		return false
	}
	p.i += len(s)
	return true
}

// span reads a JSON string without escapes or control characters and
// returns its contents.
func (p *parser) span() ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := p.b[start:j]
			if !utf8.Valid(s) {
				return nil, false
			}
			p.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

func (p *parser) str(dst *string) bool {
	s, ok := p.span()
	if ok {
		*dst = string(s)
	}
	return ok
}

// int reads an integer as JSON writes it: an optional minus, then 0 or
// digits without a leading zero.
func (p *parser) int(dst *int64) bool {
	j := p.i
	if j < len(p.b) && p.b[j] == '-' {
		j++
	}
	digits := j
	for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
		j++
	}
	if j == digits || p.b[digits] == '0' && j-digits > 1 {
		return false
	}
	n, err := strconv.ParseInt(string(p.b[p.i:j]), 10, 64)
	if err != nil {
		return false
	}
	*dst, p.i = n, j
	return true
}

// time reads a time with time.Time's own JSON decoding.
func (p *parser) time(dst *time.Time) bool {
	start := p.i
	if _, ok := p.span(); !ok {
		return false
	}
	return dst.UnmarshalJSON(p.b[start:p.i]) == nil
}
