package schema

import (
	"fmt"
	"regexp"
	"strings"
)

// compilePyRegex compiles a Python `re` pattern (as jsonschema's "pattern"
// and "patternProperties" use it, with re.search semantics) into a Go
// regexp with the same meaning for the constructs translated below. Go's
// RE2 and Python's re agree on the simple patterns Placement uses (anchors,
// character classes, bounded repetition, alternation, groups); the
// differences that matter are translated:
//
//   - `$` (outside a class): Python matches at the end of the string or just
//     before a final newline, so "^[A-Z]+$" accepts "ABC\n". It becomes
//     `(?:\n?\z)`; the newline is consumed, which is harmless because only
//     whether re.search finds a match is used.
//   - `\Z` is Go's `\z`.
//   - `\d`, `\w`, `\s` and their negations match Unicode in Python str
//     patterns, ASCII in Go: they are spelled out with Unicode classes.
//
// Constructs Go cannot express (look-around, backreferences) make
// compilation fail, so a schema using them fails loudly at MustCompile.
// Inline flags such as (?m) are not emulated.
func compilePyRegex(pattern string) (*regexp.Regexp, error) {
	const (
		wordClass  = `\p{L}\p{N}_`
		spaceClass = `\t\n\v\f\r \x{1c}-\x{1f}\x{85}\p{Z}`
	)
	var b strings.Builder
	inClass := false
	classStart := false // just after '[' or '[^'
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		wasClassStart := classStart
		classStart = false
		switch {
		case c == '\\':
			if i+1 >= len(rs) {
				return nil, fmt.Errorf("bad escape (end of pattern) in %q", pattern)
			}
			i++
			e := rs[i]
			switch e {
			case 'Z':
				if inClass {
					return nil, fmt.Errorf(`bad escape \Z in class in %q`, pattern)
				}
				b.WriteString(`\z`)
			case 'd':
				b.WriteString(`\p{Nd}`)
			case 'D':
				b.WriteString(`\P{Nd}`)
			case 'w':
				if inClass {
					b.WriteString(wordClass)
				} else {
					b.WriteString("[" + wordClass + "]")
				}
			case 's':
				if inClass {
					b.WriteString(spaceClass)
				} else {
					b.WriteString("[" + spaceClass + "]")
				}
			case 'W', 'S':
				if inClass {
					return nil, fmt.Errorf(`\%c inside a character class is not supported in %q`, e, pattern)
				}
				cls := wordClass
				if e == 'S' {
					cls = spaceClass
				}
				b.WriteString("[^" + cls + "]")
			default:
				b.WriteRune('\\')
				b.WriteRune(e)
			}
		case inClass:
			if c == ']' && !wasClassStart {
				inClass = false
			}
			b.WriteRune(c)
		case c == '[':
			inClass = true
			classStart = true
			b.WriteRune(c)
			if i+1 < len(rs) && rs[i+1] == '^' {
				i++
				b.WriteRune('^')
			}
		case c == '$':
			b.WriteString(`(?:\n?\z)`)
		default:
			b.WriteRune(c)
		}
	}
	if inClass {
		return nil, fmt.Errorf("unterminated character set in %q", pattern)
	}
	return regexp.Compile(b.String())
}
