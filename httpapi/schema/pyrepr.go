package schema

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file renders values the way CPython 3 does, because jsonschema builds
// its messages with repr() (e.g. "'abc' is too long") and renders the schema
// and instance of an error with pprint.pformat(width=72).

// pyRepr is Python's repr() of a value of the internal model. With sortKeys,
// dict keys come out sorted, which is what pprint's own repr does
// (sort_dicts=True); plain repr() keeps insertion order.
//
// A rendering longer than renderLimit bytes is cut there and ends with
// "...": Python would write it whole, but a message quoting megabytes of
// a request body serves nobody, and building it would cost the node many
// times the body (see ValidationError.Error).
func pyRepr(v any, sortKeys bool) string {
	var b strings.Builder
	writeRepr(&b, v, sortKeys, renderLimit)
	return cutRendering(b.String(), renderLimit)
}

// renderLimit bounds one rendered value in a message (pyRepr, pformat).
const renderLimit = 256 << 10

// cutRendering cuts s to at most limit bytes, on a character boundary,
// marking the cut with "...".
func cutRendering(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// writeRepr writes the repr of v, stopping soon after b holds more than
// limit bytes.
func writeRepr(b *strings.Builder, v any, sortKeys bool, limit int) {
	switch t := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if t {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case string:
		b.WriteString(pyStrRepr(t))
	case *number:
		b.WriteString(t.repr())
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if b.Len() > limit {
				return
			}
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e, sortKeys, limit)
		}
		b.WriteByte(']')
	case *object:
		keys := t.keys
		if sortKeys {
			keys = t.sortedKeys()
		}
		b.WriteByte('{')
		for i, k := range keys {
			if b.Len() > limit {
				return
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyStrRepr(k))
			b.WriteString(": ")
			writeRepr(b, t.vals[k], sortKeys, limit)
		}
		b.WriteByte('}')
	default:
		panic("schema: repr of unexpected internal value")
	}
}

func (n *number) repr() string {
	if n.isFloat {
		return pyFloatRepr(n.f)
	}
	return n.bigInt().String()
}

// pyFloatRepr is Python's repr(float): the shortest round-tripping digits,
// positional notation unless the decimal exponent is < -4 or >= 16, in which
// case scientific with at least two exponent digits ("1e+16", "1e-05").
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // e.g. "-1.2345e+06"
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	mant, expS, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expS)
	digits := strings.Replace(mant, ".", "", 1)
	if exp < -4 || exp >= 16 {
		out := digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		es := "+"
		if exp < 0 {
			es, exp = "-", -exp
		}
		e := strconv.Itoa(exp)
		if len(e) < 2 {
			e = "0" + e
		}
		return sign + out + "e" + es + e
	}
	decpt := exp + 1 // digits before the decimal point
	switch {
	case decpt <= 0:
		return sign + "0." + strings.Repeat("0", -decpt) + digits
	case decpt >= len(digits):
		return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0"
	default:
		return sign + digits[:decpt] + "." + digits[decpt:]
	}
}

// pyStrRepr is Python's repr(str).
func pyStrRepr(s string) string {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			writeHexEscape(&b, 'x', r, 2)
		case r < 0x7f:
			b.WriteRune(r)
		case pyIsPrintable(r):
			b.WriteRune(r)
		case r <= 0xff:
			writeHexEscape(&b, 'x', r, 2)
		case r <= 0xffff:
			writeHexEscape(&b, 'u', r, 4)
		default:
			writeHexEscape(&b, 'U', r, 8)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

func writeHexEscape(b *strings.Builder, kind byte, r rune, width int) {
	h := strconv.FormatInt(int64(r), 16)
	b.WriteByte('\\')
	b.WriteByte(kind)
	b.WriteString(strings.Repeat("0", width-len(h)))
	b.WriteString(h)
}

// pyIsPrintable approximates str.isprintable() for one character: Python
// treats as non-printable the categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs
// (except the ASCII space), which is the complement of Go's unicode.IsPrint
// (L, M, N, P, S and ASCII space). The Unicode versions of the two runtimes
// may differ for recently assigned characters.
func pyIsPrintable(r rune) bool { return unicode.IsPrint(r) }

// pyIsSpace is str.isspace() for one character (also what the re module's \s
// matches in str patterns).
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pformat is pprint.pformat(v, width=72) (indent=1, sort_dicts=True,
// compact=False), as used by ValidationError.__str__.
//
// Like pyRepr, it stops past renderLimit bytes and ends with "...".
func pformat(v any) string {
	p := &prettyPrinter{width: 72}
	p.format(v, 0, 0, 0)
	return cutRendering(p.b.String(), renderLimit)
}

type prettyPrinter struct {
	b     strings.Builder
	width int
}

// format mirrors PrettyPrinter._format.
func (p *prettyPrinter) format(v any, indent, allowance, level int) {
	if p.b.Len() > renderLimit {
		return
	}
	// Whether the repr fits in the line needs only its first characters
	// (at most 4 bytes each): a value that does not fit is not written
	// whole, so its repr need not be made whole.
	room := p.width - indent - allowance
	var head strings.Builder
	writeRepr(&head, v, true, 4*max(room, 0)+4)
	rep := head.String()
	if utf8.RuneCountInString(rep) > room {
		switch t := v.(type) {
		case *object:
			p.pprintDict(t, indent, allowance, level+1)
			return
		case []any:
			p.pprintList(t, indent, allowance, level+1)
			return
		case string:
			p.pprintStr(t, indent, allowance, level+1)
			return
		}
	}
	p.b.WriteString(rep)
}

func (p *prettyPrinter) pprintDict(o *object, indent, allowance, level int) {
	p.b.WriteByte('{')
	if len(o.keys) > 0 {
		// _format_dict_items
		allowance++
		indent++
		delimnl := ",\n" + strings.Repeat(" ", indent)
		keys := o.sortedKeys()
		for i, k := range keys {
			if p.b.Len() > renderLimit {
				break
			}
			last := i == len(keys)-1
			rep := pyStrRepr(k)
			p.b.WriteString(rep)
			p.b.WriteString(": ")
			a := 1
			if last {
				a = allowance
			}
			p.format(o.vals[k], indent+utf8.RuneCountInString(rep)+2, a, level)
			if !last {
				p.b.WriteString(delimnl)
			}
		}
	}
	p.b.WriteByte('}')
}

func (p *prettyPrinter) pprintList(l []any, indent, allowance, level int) {
	p.b.WriteByte('[')
	// _format_items
	allowance++
	indent++
	delimnl := ",\n" + strings.Repeat(" ", indent)
	for i, e := range l {
		if p.b.Len() > renderLimit {
			break
		}
		last := i == len(l)-1
		if i > 0 {
			p.b.WriteString(delimnl)
		}
		a := 1
		if last {
			a = allowance
		}
		p.format(e, indent, a, level)
	}
	p.b.WriteByte(']')
}

// pprintStr mirrors PrettyPrinter._pprint_str: a string too long for the
// line is split into adjacent literals at line ends and whitespace runs,
// wrapped in parentheses at the top level.
func (p *prettyPrinter) pprintStr(s string, indent, allowance, level int) {
	if s == "" {
		p.b.WriteString(pyStrRepr(s))
		return
	}
	var chunks []string
	lines := pySplitLinesKeepEnds(s)
	if level == 1 {
		indent++
		allowance++
	}
	maxWidth := p.width - indent
	maxWidth1 := maxWidth
	var rep string
	for i, line := range lines {
		rep = pyStrRepr(line)
		if i == len(lines)-1 {
			maxWidth1 -= allowance
		}
		if utf8.RuneCountInString(rep) <= maxWidth1 {
			chunks = append(chunks, rep)
			continue
		}
		parts := splitWords(line)
		maxWidth2 := maxWidth
		current := ""
		for j, part := range parts {
			candidate := current + part
			if j == len(parts)-1 && i == len(lines)-1 {
				maxWidth2 -= allowance
			}
			if utf8.RuneCountInString(pyStrRepr(candidate)) > maxWidth2 {
				if current != "" {
					chunks = append(chunks, pyStrRepr(current))
				}
				current = part
			} else {
				current = candidate
			}
		}
		if current != "" {
			chunks = append(chunks, pyStrRepr(current))
		}
	}
	if len(chunks) == 1 {
		p.b.WriteString(rep)
		return
	}
	if level == 1 {
		p.b.WriteByte('(')
	}
	for i, c := range chunks {
		if i > 0 {
			p.b.WriteString("\n" + strings.Repeat(" ", indent))
		}
		p.b.WriteString(c)
	}
	if level == 1 {
		p.b.WriteByte(')')
	}
}

// pySplitLinesKeepEnds is str.splitlines(True).
func pySplitLinesKeepEnds(s string) []string {
	var lines []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		end := -1
		switch r {
		case '\r':
			end = i + size
			if end < len(s) && s[end] == '\n' {
				end++
			}
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			end = i + size
		}
		if end >= 0 {
			lines = append(lines, s[start:end])
			start, i = end, end
			continue
		}
		i += size
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}

// splitWords is re.findall(r'\S*\s*', line) without the final empty match.
func splitWords(line string) []string {
	var parts []string
	i := 0
	for i < len(line) {
		j := i
		for j < len(line) {
			r, size := utf8.DecodeRuneInString(line[j:])
			if pyIsSpace(r) {
				break
			}
			j += size
		}
		for j < len(line) {
			r, size := utf8.DecodeRuneInString(line[j:])
			if !pyIsSpace(r) {
				break
			}
			j += size
		}
		parts = append(parts, line[i:j])
		i = j
	}
	return parts
}

// formatAsIndex is jsonschema._utils.format_as_index: container[i][j]...
func formatAsIndex(container string, indices []any) string {
	if len(indices) == 0 {
		return container
	}
	var b strings.Builder
	b.WriteString(container)
	b.WriteByte('[')
	for i, idx := range indices {
		if i > 0 {
			b.WriteString("][")
		}
		switch t := idx.(type) {
		case string:
			b.WriteString(pyStrRepr(t))
		case int:
			b.WriteString(strconv.Itoa(t))
		}
	}
	b.WriteByte(']')
	return b.String()
}
