package httpapi

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Upstream writes every JSON body with Python's json.dumps defaults: ", "
// and ": " between items, and only ASCII (anything else, DEL included, as
// \uXXXX escapes). Clients compare and hash answers byte for byte, so
// placementd writes the same bytes.

// pyJSON encodes v as json.dumps(v) would.
func pyJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return pythonize(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// pythonize rewrites compact JSON (encoding/json's output) into
// json.dumps' form.
func pythonize(compact []byte) []byte {
	out := make([]byte, 0, len(compact)+len(compact)/8)
	inString := false
	for i := 0; i < len(compact); i++ {
		c := compact[i]
		switch {
		case !inString:
			out = append(out, c)
			switch c {
			case '"':
				inString = true
			case ',', ':':
				out = append(out, ' ')
			}
		case c == '\\':
			// encoding/json escapes <, > and & for HTML (in values that
			// marshal themselves, whatever the encoder's setting); Python
			// does not.
			if i+5 < len(compact) && compact[i+1] == 'u' && compact[i+2] == '0' && compact[i+3] == '0' {
				if r, ok := htmlEscapes[string(compact[i+4:i+6])]; ok {
					out = append(out, r)
					i += 5
					continue
				}
			}
			out = append(out, c, compact[i+1])
			i++
		case c == '"':
			out = append(out, c)
			inString = false
		case c >= 0x7f:
			r, size := utf8.DecodeRune(compact[i:])
			out = appendUnicodeEscape(out, r)
			i += size - 1
		default:
			out = append(out, c)
		}
	}
	return out
}

var htmlEscapes = map[string]byte{"3c": '<', "3e": '>', "26": '&'}

// appendUnicodeEscape writes r as json.dumps' \uXXXX escape (a surrogate
// pair beyond the Basic Multilingual Plane).
func appendUnicodeEscape(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	esc := func(b []byte, u rune) []byte {
		return append(b, '\\', 'u', hex[u>>12&0xf], hex[u>>8&0xf], hex[u>>4&0xf], hex[u&0xf])
	}
	if r > 0xffff {
		r -= 0x10000
		return esc(esc(b, 0xd800+(r>>10)), 0xdc00+(r&0x3ff))
	}
	return esc(b, r)
}

// pyPlain says which bytes json.dumps writes as they are: printable ASCII
// but the quote and the backslash. (One table load per byte, where four
// comparisons were: a large answer is mostly uuids.)
var pyPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainWord reports whether all 8 bytes of w are pyPlain, testing them
// at once as one word: none below 0x20, none with the high bit, none equal
// to '"', '\\' or 0x7f. (hasLess(y, n) is non-zero exactly when a byte of
// y is below n, for 1 < n <= 128 when no byte of y has the high bit, which
// x&highs has already caught, and for n = 1, a zero byte, always.)
func plainWord(w string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
	hasLess := func(x, n uint64) uint64 { return (x - ones*n) &^ x & highs }
	bad := x&highs | hasLess(x, 0x20) | hasLess(x^(ones*'"'), 1) | hasLess(x^(ones*'\\'), 1) | hasLess(x^(ones*0x7f), 1)
	return bad == 0
}

// appendPyString appends s as a json.dumps string.
func appendPyString(b []byte, s string) []byte {
	b = append(b, '"')
	// Runs of bytes that need no escape (uuids, class and trait names:
	// nearly everything an answer holds) are copied whole.
	plain := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plainWord(s[i:i+8]) {
			i += 8
			continue
		}
		c := s[i]
		if pyPlain[c] {
			i++
			continue
		}
		b = append(b, s[plain:i]...)
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c < 0x20 || c == 0x7f:
			b = appendUnicodeEscape(b, rune(c))
		default: // c > 0x7f
			r, size := utf8.DecodeRuneInString(s[i:])
			b = appendUnicodeEscape(b, r)
			i += size
			plain = i
			continue
		}
		i++
		plain = i
	}
	b = append(b, s[plain:]...)
	return append(b, '"')
}

// dict is a JSON object whose keys keep the order they were first set in,
// as a Python dict's do (encoding/json writes a Go map's keys sorted).
type dict struct {
	keys []string
	vals map[string]any
}

func newDict() *dict { return &dict{vals: map[string]any{}} }

// set sets k, which keeps its first position.
func (d *dict) set(k string, v any) {
	if _, ok := d.vals[k]; !ok {
		d.keys = append(d.keys, k)
	}
	d.vals[k] = v
}

func (d *dict) get(k string) (any, bool) {
	v, ok := d.vals[k]
	return v, ok
}

func (d *dict) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, k := range d.keys {
		if i > 0 {
			b = append(b, ',')
		}
		kj, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vj, err := json.Marshal(d.vals[k])
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, kj...), ':'), vj...)
	}
	return append(b, '}'), nil
}
