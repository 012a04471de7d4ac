package schema

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// pyLoads is upstream's jsonutils.loads of a request body: the bytes are
// decoded as strict UTF-8, then parsed by Python 3.11's json module (its C
// scanner), and every error reads as that module's: "Expecting value: line
// 1 column 1 (char 0)", "Extra data: ...", "'utf-8' codec can't decode
// byte 0xff in position 0: invalid start byte". As Python's json, it
// accepts NaN, Infinity and -Infinity (as floats) and duplicated keys (the
// last value at the first key's position). Positions in messages count
// characters, not bytes.
func pyLoads(body []byte) (any, error) {
	if msg := pyUTF8Error(body); msg != "" {
		return nil, &DecodeError{fmt.Errorf("%s", msg)}
	}
	p := &pyScanner{s: body, dry: true}
	if bytes.HasPrefix(body, []byte("\ufeff")) {
		return nil, p.fail("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0)
	}
	// A first pass only checks the syntax, building nothing: a malformed
	// body, however large, costs its own bytes and no more. The second
	// builds the values of a well-formed one.
	for _, dry := range []bool{true, false} {
		p.dry = dry
		if !dry {
			p.src = string(body)
		}
		v, end, err := p.value(p.skipWS(0), 0)
		if err != nil {
			return nil, err
		}
		if end = p.skipWS(end); end != len(body) {
			return nil, p.fail("Extra data", end)
		}
		if !dry {
			return v, nil
		}
	}
	panic("unreachable")
}

// pyScanner parses a valid UTF-8 document. Every byte that matters to the
// grammar is ASCII, so it works on bytes and converts positions to
// characters only for messages.
type pyScanner struct {
	s []byte
	// src is s as a string, for the building pass: strings without
	// escapes and number literals are slices of it, not copies.
	src string
	// dry scans without building values (they come back nil): the
	// errors are the same.
	dry bool
	// sizes holds the member count of every non-empty array and object,
	// in the order they open: the dry pass notes them, the building pass
	// (next: the index of the next one) makes each exactly that big.
	sizes []int32
	next  int
}

// fail is a json.JSONDecodeError at byte offset pos.
func (p *pyScanner) fail(msg string, pos int) error {
	before := p.s[:pos]
	line := bytes.Count(before, []byte("\n")) + 1
	char := utf8.RuneCount(before)
	col := char + 1 // pos - rfind('\n') with no newline (-1)
	if nl := bytes.LastIndexByte(before, '\n'); nl >= 0 {
		col = utf8.RuneCount(before[nl:])
	}
	return &DecodeError{fmt.Errorf("%s: line %d column %d (char %d)", msg, line, col, char)}
}

// expectingValue is the StopIteration of Python's scan_once: the message
// the decoder makes of it, at the innermost position that held no value.
func (p *pyScanner) expectingValue(pos int) error { return p.fail("Expecting value", pos) }

func isPyWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *pyScanner) skipWS(i int) int {
	for i < len(p.s) && isPyWS(p.s[i]) {
		i++
	}
	return i
}

func (p *pyScanner) hasAt(i int, lit string) bool {
	return i+len(lit) <= len(p.s) && string(p.s[i:i+len(lit)]) == lit
}

// value is scan_once_unicode: the value starting at i and where it ends.
func (p *pyScanner) value(i, depth int) (any, int, error) {
	if depth > maxDepth {
		// Python would raise RecursionError (upstream's 500) long before.
		return nil, 0, &DecodeError{fmt.Errorf("JSON document nested too deeply")}
	}
	if i >= len(p.s) {
		return nil, 0, p.expectingValue(i)
	}
	switch c := p.s[i]; {
	case c == '"':
		return p.str(i + 1)
	case c == '{':
		return p.object(i+1, depth)
	case c == '[':
		return p.array(i+1, depth)
	case c == 'n' && p.hasAt(i, "null"):
		return nil, i + 4, nil
	case c == 't' && p.hasAt(i, "true"):
		return true, i + 4, nil
	case c == 'f' && p.hasAt(i, "false"):
		return false, i + 5, nil
	case c == 'N' && p.hasAt(i, "NaN"):
		return nanNumber, i + 3, nil
	case c == 'I' && p.hasAt(i, "Infinity"):
		return infNumber, i + 8, nil
	case c == '-' && p.hasAt(i, "-Infinity"):
		return negInfNumber, i + 9, nil
	}
	return p.number(i)
}

// Values are immutable: documents share these.
var (
	nanNumber    = &number{lit: "NaN", isFloat: true, f: math.NaN()}
	infNumber    = &number{lit: "Infinity", isFloat: true, f: math.Inf(1)}
	negInfNumber = &number{lit: "-Infinity", isFloat: true, f: math.Inf(-1)}
)

// emptyObject and emptyArray stand for every {} and [] of a document
// (values are never changed once built).
var (
	emptyObject any = newObject()
	emptyArray  any = []any{}
)

// smallInts are the numbers 0 to 999, shared by the documents that hold
// them: a body of many small numbers costs a slot per number, not an
// allocation.
var smallInts = func() (t [1000]*number) {
	for i := range t {
		t[i] = &number{lit: strconv.Itoa(i)}
	}
	return t
}()

// smallInt is the shared number for the literal lit, or nil.
func smallInt(lit []byte) *number {
	if len(lit) == 0 || len(lit) > 3 || (lit[0] == '0' && len(lit) > 1) {
		return nil
	}
	v := 0
	for _, c := range lit {
		if !isDigit(c) {
			return nil
		}
		v = v*10 + int(c-'0')
	}
	return smallInts[v]
}

// simpleEscape is the character a backslash and c stand for.
func simpleEscape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number is _match_number_unicode: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?
// taking the longest prefix that fits; nothing that fits is "Expecting
// value" at the start.
func (p *pyScanner) number(start int) (any, int, error) {
	i, n := start, len(p.s)
	if i < n && p.s[i] == '-' {
		i++
	}
	switch {
	case i < n && p.s[i] >= '1' && p.s[i] <= '9':
		for i++; i < n && isDigit(p.s[i]); i++ {
		}
	case i < n && p.s[i] == '0':
		i++
	default:
		return nil, 0, p.expectingValue(start)
	}
	intEnd := i
	if i+1 < n && p.s[i] == '.' && isDigit(p.s[i+1]) {
		for i += 2; i < n && isDigit(p.s[i]); i++ {
		}
	}
	if i+1 < n && (p.s[i] == 'e' || p.s[i] == 'E') {
		j := i + 1
		if j+1 < n && (p.s[j] == '-' || p.s[j] == '+') {
			j++
		}
		k := j
		for k < n && isDigit(p.s[k]) {
			k++
		}
		if k > j {
			i = k
		}
	}
	if i == intEnd {
		// An int: refused past Python's limit in the first pass, before
		// any decimal-to-binary conversion (quadratic in the digits).
		digits := intEnd - start
		if p.s[start] == '-' {
			digits--
		}
		if err := IntDigitsError(digits); err != nil {
			return nil, 0, &DecodeError{err}
		}
	}
	if p.dry {
		return nil, i, nil
	}
	if n := smallInt(p.s[start:i]); n != nil {
		return n, i, nil
	}
	num, err := parseNumber(p.src[start:i])
	if err != nil {
		return nil, 0, &DecodeError{err}
	}
	return num, i, nil
}

// str is scanstring_unicode: the string whose opening quote is at
// begin-1.
func (p *pyScanner) str(begin int) (any, int, error) {
	quote := begin - 1
	var b strings.Builder
	i, n := begin, len(p.s)
	for {
		j := i
		for j < n && p.s[j] != '"' && p.s[j] != '\\' {
			if p.s[j] <= 0x1f {
				return nil, 0, p.fail("Invalid control character at", j)
			}
			j++
		}
		if j < n && p.s[j] == '"' && i == begin && !p.dry {
			// No escape: the string is a slice of the document.
			return p.src[begin:j], j + 1, nil
		}
		if !p.dry {
			b.Write(p.s[i:j])
		}
		if j == n {
			return nil, 0, p.fail("Unterminated string starting at", quote)
		}
		if p.s[j] == '"' {
			return b.String(), j + 1, nil
		}
		// A backslash at j.
		if j+1 == n {
			return nil, 0, p.fail("Unterminated string starting at", quote)
		}
		esc := p.s[j+1]
		if esc != 'u' {
			r, ok := simpleEscape(esc)
			if !ok {
				return nil, 0, p.fail("Invalid \\escape", j)
			}
			if !p.dry {
				b.WriteByte(r)
			}
			i = j + 2
			continue
		}
		// \uXXXX at j; the 'u' is at j+1.
		if j+6 >= n {
			return nil, 0, p.fail("Invalid \\uXXXX escape", j+1)
		}
		c, ok := hex4(p.s[j+2 : j+6])
		if !ok {
			return nil, 0, p.fail("Invalid \\uXXXX escape", j+1)
		}
		i = j + 6
		if utf16.IsSurrogate(rune(c)) && c < 0xdc00 && i+6 < n && p.s[i] == '\\' && p.s[i+1] == 'u' {
			c2, ok := hex4(p.s[i+2 : i+6])
			if !ok {
				return nil, 0, p.fail("Invalid \\uXXXX escape", i+1)
			}
			if c2 >= 0xdc00 && c2 <= 0xdfff {
				c = int(utf16.DecodeRune(rune(c), rune(c2)))
				i += 6
			}
		}
		// A lone surrogate (Python keeps it) becomes U+FFFD.
		if !p.dry {
			b.WriteRune(rune(c))
		}
	}
}

func hex4(h []byte) (int, bool) {
	v := 0
	for _, c := range h {
		v <<= 4
		switch {
		case isDigit(c):
			v |= int(c - '0')
		case 'a' <= c && c <= 'f':
			v |= int(c-'a') + 10
		case 'A' <= c && c <= 'F':
			v |= int(c-'A') + 10
		default:
			return 0, false
		}
	}
	return v, true
}

// object is _parse_object_unicode; i follows the '{'.
func (p *pyScanner) object(i, depth int) (any, int, error) {
	i = p.skipWS(i)
	if i < len(p.s) && p.s[i] == '}' {
		return emptyObject, i + 1, nil
	}
	var obj *object
	at := p.open()
	if !p.dry {
		obj = newObject()
		obj.keys = make([]string, 0, at)
		obj.vals = make(map[string]any, at)
	}
	for members := int32(1); ; members++ {
		if i >= len(p.s) || p.s[i] != '"' {
			return nil, 0, p.fail("Expecting property name enclosed in double quotes", i)
		}
		k, next, err := p.str(i + 1)
		if err != nil {
			return nil, 0, err
		}
		i = p.skipWS(next)
		if i >= len(p.s) || p.s[i] != ':' {
			return nil, 0, p.fail("Expecting ':' delimiter", i)
		}
		v, next, err := p.value(p.skipWS(i+1), depth+1)
		if err != nil {
			return nil, 0, err
		}
		if !p.dry {
			obj.set(k.(string), v)
		}
		i = p.skipWS(next)
		if i < len(p.s) && p.s[i] == '}' {
			p.close(at, members)
			return obj, i + 1, nil
		}
		if i >= len(p.s) || p.s[i] != ',' {
			return nil, 0, p.fail("Expecting ',' delimiter", i)
		}
		i = p.skipWS(i + 1)
	}
}

// open notes a non-empty array or object opening. In the dry pass it
// returns where its size goes (for close); in the building pass, its size.
func (p *pyScanner) open() int {
	if p.dry {
		p.sizes = append(p.sizes, 0)
		return len(p.sizes) - 1
	}
	n := p.sizes[p.next]
	p.next++
	return int(n)
}

// close notes, in the dry pass, the size of the container open returned
// at for.
func (p *pyScanner) close(at int, members int32) {
	if p.dry {
		p.sizes[at] = members
	}
}

// array is _parse_array_unicode; i follows the '['.
func (p *pyScanner) array(i, depth int) (any, int, error) {
	i = p.skipWS(i)
	if i < len(p.s) && p.s[i] == ']' {
		return emptyArray, i + 1, nil
	}
	var arr []any
	at := p.open()
	if !p.dry {
		arr = make([]any, 0, at)
	}
	for members := int32(1); ; members++ {
		v, next, err := p.value(i, depth+1)
		if err != nil {
			return nil, 0, err
		}
		if !p.dry {
			arr = append(arr, v)
		}
		i = p.skipWS(next)
		if i < len(p.s) && p.s[i] == ']' {
			p.close(at, members)
			return arr, i + 1, nil
		}
		if i >= len(p.s) || p.s[i] != ',' {
			return nil, 0, p.fail("Expecting ',' delimiter", i)
		}
		i = p.skipWS(i + 1)
	}
}

// pyUTF8Error is the message of bytes.decode('utf-8') failing on b, or ""
// when b is valid UTF-8: CPython's decoder names the first bad sequence
// as an invalid start byte, an invalid continuation byte (with the bytes
// before it) or an unexpected end of data (the bytes to the end).
func pyUTF8Error(b []byte) string {
	if utf8.Valid(b) {
		return ""
	}
	cont := func(c byte) bool { return c&0xc0 == 0x80 }
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			i++
			continue
		}
		need := 0 // continuation bytes after the lead
		switch {
		case c >= 0xc2 && c <= 0xdf:
			need = 1
		case c >= 0xe0 && c <= 0xef:
			need = 2
		case c >= 0xf0 && c <= 0xf4:
			need = 3
		default:
			return pyDecodeMsg(b, i, i+1, "invalid start byte")
		}
		// The second byte's range depends on the lead (no overlong
		// forms, no surrogates, nothing past U+10FFFF).
		lo, hi := byte(0x80), byte(0xbf)
		switch c {
		case 0xe0:
			lo = 0xa0
		case 0xed:
			hi = 0x9f
		case 0xf0:
			lo = 0x90
		case 0xf4:
			hi = 0x8f
		}
		for k := 1; k <= need; k++ {
			if i+k >= len(b) {
				return pyDecodeMsg(b, i, len(b), "unexpected end of data")
			}
			d := b[i+k]
			if !cont(d) || (k == 1 && (d < lo || d > hi)) {
				return pyDecodeMsg(b, i, i+k, "invalid continuation byte")
			}
		}
		i += need + 1
	}
	return ""
}

func pyDecodeMsg(b []byte, start, end int, reason string) string {
	if end-start == 1 {
		return fmt.Sprintf("'utf-8' codec can't decode byte 0x%02x in position %d: %s", b[start], start, reason)
	}
	return fmt.Sprintf("'utf-8' codec can't decode bytes in position %d-%d: %s", start, end-1, reason)
}
