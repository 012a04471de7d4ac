package httpapi

import (
	"sort"
	"strconv"
	"strings"
)

// Content negotiation as webob does it, since upstream's 406s (check_accept)
// and the format of its error bodies (HTML, JSON or plain text) both follow
// webob's reading of the Accept header, quirks included: a media range with
// parameters never matches a parameterless offer, and a header webob cannot
// parse counts as "anything goes".

// mediaRange is one element of a valid Accept header.
type mediaRange struct {
	typ, sub  string // lower case
	hasParams bool   // media type parameters (before q)
	q         float64
}

// parseAccept parses an Accept header with the grammar of RFC 7231 as webob
// applies it. ok is false for a header webob deems invalid.
func parseAccept(h string) (ranges []mediaRange, ok bool) {
	p := &acceptParser{s: h}
	if h == "" {
		return nil, true
	}
	if h[0] == ',' {
		p.i = 1
	} else if !p.element() {
		return nil, false
	}
	for p.i < len(p.s) {
		p.ows()
		if !p.byte(',') {
			return nil, false
		}
		save := p.i
		p.ows()
		if p.i == len(p.s) || !p.element() {
			p.i = save
		}
	}
	return p.out, true
}

type acceptParser struct {
	s   string
	i   int
	out []mediaRange
}

func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func (p *acceptParser) ows() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *acceptParser) byte(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *acceptParser) token() (string, bool) {
	start := p.i
	for p.i < len(p.s) && isTchar(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i], p.i > start
}

// quoted consumes a quoted-string.
func (p *acceptParser) quoted() bool {
	start := p.i
	if !p.byte('"') {
		return false
	}
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return true
		case c == '\\':
			if p.i+1 < len(p.s) {
				n := p.s[p.i+1]
				if n == '\t' || n == ' ' || (0x21 <= n && n <= 0x7e) || n >= 0x80 {
					p.i += 2
					continue
				}
			}
			p.i = start
			return false
		case c == '\t' || c == ' ' || c == 0x21 || (0x23 <= c && c <= 0x5b) || (0x5d <= c && c <= 0x7e) || c >= 0x80:
			p.i++
		default:
			p.i = start
			return false
		}
	}
	p.i = start
	return false
}

// value consumes token / quoted-string.
func (p *acceptParser) value() bool {
	if _, ok := p.token(); ok {
		return true
	}
	return p.quoted()
}

// semicolon consumes OWS ";" OWS, or nothing.
func (p *acceptParser) semicolon() bool {
	save := p.i
	p.ows()
	if p.byte(';') {
		p.ows()
		return true
	}
	p.i = save
	return false
}

func (p *acceptParser) isQ() bool {
	return p.i+1 < len(p.s) && (p.s[p.i] == 'q' || p.s[p.i] == 'Q') && p.s[p.i+1] == '='
}

// element consumes media-range [weight *accept-ext]; on failure it consumes
// nothing.
func (p *acceptParser) element() bool {
	start := p.i
	typ, ok := p.token()
	if !ok || !p.byte('/') {
		p.i = start
		return false
	}
	sub, ok := p.token()
	if !ok {
		p.i = start
		return false
	}
	m := mediaRange{typ: strings.ToLower(typ), sub: strings.ToLower(sub), q: 1}
	// Media type parameters: any name but q.
	for {
		save := p.i
		if !p.semicolon() || p.isQ() {
			p.i = save
			break
		}
		if _, ok := p.token(); !ok || !p.byte('=') || !p.value() {
			p.i = save
			break
		}
		m.hasParams = true
	}
	save := p.i
	if p.semicolon() && p.isQ() {
		p.i += 2
		qs, ok := p.qvalue()
		if !ok {
			p.i = save
		} else {
			m.q, _ = strconv.ParseFloat(qs, 64)
			// accept-ext: OWS ";" OWS token [ "=" value ].
			for {
				s := p.i
				if !p.semicolon() {
					break
				}
				if _, ok := p.token(); !ok {
					p.i = s
					break
				}
				if p.byte('=') && !p.value() {
					p.i = s
					break
				}
			}
		}
	} else {
		p.i = save
	}
	p.out = append(p.out, m)
	return true
}

// qvalue consumes ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ).
func (p *acceptParser) qvalue() (string, bool) {
	start := p.i
	if p.i >= len(p.s) || (p.s[p.i] != '0' && p.s[p.i] != '1') {
		return "", false
	}
	lead := p.s[p.i]
	p.i++
	if p.byte('.') {
		for n := 0; n < 3 && p.i < len(p.s); n++ {
			c := p.s[p.i]
			if c < '0' || c > '9' || (lead == '1' && c != '0') {
				break
			}
			p.i++
		}
	}
	return p.s[start:p.i], true
}

// acceptableOffers is webob's acceptable_offers for parameterless offers:
// the offers the header allows, best quality first, ties in offer order.
// ok=false (an invalid header) allows every offer.
func acceptableOffers(ranges []mediaRange, valid bool, offers []string) []string {
	if !valid {
		return append([]string(nil), offers...)
	}
	type found struct {
		q           float64
		idx, specif int
	}
	var res []found
	for idx, offer := range offers {
		otyp, osub, _ := strings.Cut(offer, "/")
		best := found{idx: idx, specif: 0}
		for _, m := range ranges {
			var specif int
			switch {
			case m.typ == otyp && m.sub == osub:
				if m.hasParams {
					continue
				}
				specif = 3
			case m.sub == "*" && m.typ == otyp:
				specif = 2
			case m.typ == "*" && m.sub == "*":
				specif = 1
			default:
				continue
			}
			if specif <= best.specif {
				continue
			}
			best.q, best.specif = m.q, specif
		}
		if best.specif > 0 && best.q != 0 {
			res = append(res, best)
		}
	}
	sort.SliceStable(res, func(i, j int) bool { return res[i].q > res[j].q })
	out := make([]string, len(res))
	for i, f := range res {
		out[i] = offers[f.idx]
	}
	return out
}

// acceptHeader is the request's Accept header as the WSGI environ holds it
// (repeated headers joined with ","), and whether there is one.
func acceptHeader(h map[string][]string) (string, bool) {
	v, ok := h["Accept"]
	if !ok {
		return "", false
	}
	return strings.Join(v, ","), true
}
