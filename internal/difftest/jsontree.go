package difftest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf16"
)

// jnode is a JSON value that keeps what a byte comparison would see and
// Go's decoders drop: object key order and the literal text of numbers
// (16.0 is not 16 to a Python client).
type jnode struct {
	kind byte     // '{' object, '[' array, '"' string, '0' number, 'l' true/false/null
	keys []string // object keys, in order
	kids []*jnode // object values (parallel to keys) or array elements
	text string   // string value, number literal or true/false/null
}

// parseJSON reads one JSON document (RFC 8259 only: the answers compared
// are written by json.dumps and by placementd).
func parseJSON(b []byte) (*jnode, error) {
	p := &jparser{s: b}
	p.ws()
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("extra data at byte %d", p.i)
	}
	return n, nil
}

type jparser struct {
	s []byte
	i int
}

func (p *jparser) ws() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *jparser) value() (*jnode, error) {
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("unexpected end of JSON")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		n := &jnode{kind: '{'}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return n, nil
		}
		for {
			p.ws()
			k, err := p.value()
			if err != nil {
				return nil, err
			}
			if k.kind != '"' {
				return nil, fmt.Errorf("object key is not a string at byte %d", p.i)
			}
			p.ws()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, fmt.Errorf("expected ':' at byte %d", p.i)
			}
			p.i++
			p.ws()
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.keys, n.kids = append(n.keys, k.text), append(n.kids, v)
			p.ws()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return n, nil
			}
			return nil, fmt.Errorf("expected ',' or '}' at byte %d", p.i)
		}
	case c == '[':
		p.i++
		n := &jnode{kind: '['}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return n, nil
		}
		for {
			p.ws()
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, v)
			p.ws()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == ']' {
				p.i++
				return n, nil
			}
			return nil, fmt.Errorf("expected ',' or ']' at byte %d", p.i)
		}
	case c == '"':
		start := p.i
		p.i++
		for p.i < len(p.s) && p.s[p.i] != '"' {
			if p.s[p.i] == '\\' {
				p.i++
			}
			p.i++
		}
		if p.i >= len(p.s) {
			return nil, fmt.Errorf("unterminated string at byte %d", start)
		}
		p.i++
		var s string
		if err := json.Unmarshal(p.s[start:p.i], &s); err != nil {
			return nil, err
		}
		return &jnode{kind: '"', text: s}, nil
	case c == '-' || ('0' <= c && c <= '9'):
		start := p.i
		for p.i < len(p.s) && strings.IndexByte("+-.eE0123456789", p.s[p.i]) >= 0 {
			p.i++
		}
		return &jnode{kind: '0', text: string(p.s[start:p.i])}, nil
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(string(p.s[p.i:]), lit) {
				p.i += len(lit)
				return &jnode{kind: 'l', text: lit}, nil
			}
		}
		return nil, fmt.Errorf("unexpected %q at byte %d", c, p.i)
	}
}

// pyDumps writes n as Python's json.dumps does by default (", " and ": "
// separators, ASCII only): the bytes upstream sends.
func (n *jnode) pyDumps(b *strings.Builder) {
	switch n.kind {
	case '{':
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			pyString(b, k)
			b.WriteString(": ")
			n.kids[i].pyDumps(b)
		}
		b.WriteByte('}')
	case '[':
		b.WriteByte('[')
		for i, k := range n.kids {
			if i > 0 {
				b.WriteString(", ")
			}
			k.pyDumps(b)
		}
		b.WriteByte(']')
	case '"':
		pyString(b, n.text)
	default:
		b.WriteString(n.text)
	}
}

func (n *jnode) String() string {
	var b strings.Builder
	n.pyDumps(&b)
	return b.String()
}

// pyString is json.dumps' ASCII-only string.
func pyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || r > 0x7e:
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// diff describes the first difference between the upstream answer a and
// placementd's b, or returns "". Where unordered(path) holds, the order of
// an object's keys or an array's elements is not compared (upstream's is
// undefined there).
func diff(path string, a, b *jnode, unordered func(path string) bool) string {
	where := path
	if where == "" {
		where = "(top)"
	}
	if a.kind == '"' && b.kind == '"' && a.text != b.text && len(a.text)+len(b.text) > 600 {
		i := 0
		for i < len(a.text) && i < len(b.text) && a.text[i] == b.text[i] {
			i++
		}
		from := max(0, i-150)
		return fmt.Sprintf("%s: differs at byte %d: upstream ...%q, placementd ...%q", where, i,
			truncate(a.text[from:], 300), truncate(b.text[from:], 300))
	}
	if a.kind != b.kind || (a.kind != '{' && a.kind != '[' && a.text != b.text) {
		return fmt.Sprintf("%s: upstream %s, placementd %s", where, truncate(a.String(), 300), truncate(b.String(), 300))
	}
	switch a.kind {
	case '{':
		free := unordered(path)
		ak, bk := a.keys, b.keys
		if free {
			ak, bk = sortedCopy(ak), sortedCopy(bk)
		}
		if strings.Join(ak, "\x00") != strings.Join(bk, "\x00") {
			return fmt.Sprintf("%s: keys upstream %q, placementd %q", where, a.keys, b.keys)
		}
		for i, k := range a.keys {
			j := i
			if free {
				j = indexOf(b.keys, k)
			}
			if d := diff(join(path, k), a.kids[i], b.kids[j], unordered); d != "" {
				return d
			}
		}
	case '[':
		if len(a.kids) != len(b.kids) {
			return fmt.Sprintf("%s: %d elements upstream, %d placementd: upstream %s, placementd %s",
				where, len(a.kids), len(b.kids), truncate(a.String(), 300), truncate(b.String(), 300))
		}
		ak, bk := a.kids, b.kids
		if unordered(path) {
			ak, bk = sortedNodes(ak), sortedNodes(bk)
		}
		for i := range ak {
			if d := diff(join(path, "*"), ak[i], bk[i], unordered); d != "" {
				return d
			}
		}
	}
	return ""
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func indexOf(s []string, k string) int {
	for i, x := range s {
		if x == k {
			return i
		}
	}
	return -1
}

// sortedNodes orders array elements by their canonical text, with object
// keys sorted, so that equal multisets compare equal.
func sortedNodes(ns []*jnode) []*jnode {
	out := append([]*jnode(nil), ns...)
	sort.SliceStable(out, func(i, j int) bool { return canonical(out[i]) < canonical(out[j]) })
	return out
}

func canonical(n *jnode) string {
	switch n.kind {
	case '{':
		idx := make([]int, len(n.keys))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(i, j int) bool { return n.keys[idx[i]] < n.keys[idx[j]] })
		var b strings.Builder
		b.WriteByte('{')
		for _, i := range idx {
			pyString(&b, n.keys[i])
			b.WriteByte(':')
			b.WriteString(canonical(n.kids[i]))
			b.WriteByte(',')
		}
		b.WriteByte('}')
		return b.String()
	case '[':
		parts := make([]string, len(n.kids))
		for i, k := range n.kids {
			parts[i] = canonical(k)
		}
		sort.Strings(parts)
		return "[" + strings.Join(parts, ",") + "]"
	}
	return n.String()
}
