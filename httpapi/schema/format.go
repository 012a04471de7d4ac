package schema

import (
	"strings"
	"unicode"
)

// Formats checked, as jsonschema.FormatChecker() does in 4.10.3. Only the
// formats Placement's schemas use are implemented; MustCompile rejects
// others rather than silently not checking them.
var formatCheckers = map[string]func(any) bool{
	"uuid": isUUID,
}

// isUUID is jsonschema._format.is_uuid:
//
//	if not isinstance(instance, str): return True
//	UUID(instance)   # ValueError -> not a uuid
//	return all(instance[position] == "-" for position in (8, 13, 18, 23))
//
// where uuid.UUID(hex) removes "urn:" and "uuid:", strips "{" and "}" from
// both ends, removes every "-", requires 32 characters and parses them with
// int(hex, 16). So the check is lenient in ways beyond the canonical
// 8-4-4-4-12 form (extra dashes, braces, and whatever int() accepts), and
// those leniencies are reproduced here.
func isUUID(instance any) bool {
	s, ok := instance.(string)
	if !ok {
		return true
	}
	h := strings.ReplaceAll(s, "urn:", "")
	h = strings.ReplaceAll(h, "uuid:", "")
	h = strings.Trim(h, "{}")
	h = strings.ReplaceAll(h, "-", "")
	hr := []rune(h)
	if len(hr) != 32 || !pyParseHexInt(hr) {
		return false
	}
	rs := []rune(s) // at least 32 runes long here
	for _, pos := range []int{8, 13, 18, 23} {
		if rs[pos] != '-' {
			return false
		}
	}
	return true
}

// pyParseHexInt reports whether Python's int(s, 16) accepts s: surrounding
// whitespace, an optional sign, an optional 0x prefix, hex digits (non-ASCII
// decimal digits count as their ASCII value) with single underscores
// between digits.
func pyParseHexInt(rs []rune) bool {
	// _PyUnicode_TransformDecimalAndSpaceToASCII: ASCII is kept, other
	// whitespace becomes ' ', other decimal digits become ASCII digits,
	// anything else makes the parse fail.
	t := make([]rune, len(rs))
	for i, r := range rs {
		switch {
		case r < 127:
			t[i] = r
		case pyIsSpace(r):
			t[i] = ' '
		default:
			d, ok := unicodeDecimal(r)
			if !ok {
				return false
			}
			t[i] = '0' + rune(d)
		}
	}
	isSpace := func(r rune) bool { return strings.ContainsRune(" \t\n\v\f\r", r) }
	i, j := 0, len(t)
	for i < j && isSpace(t[i]) {
		i++
	}
	for j > i && isSpace(t[j-1]) {
		j--
	}
	t = t[i:j]
	if len(t) > 0 && (t[0] == '+' || t[0] == '-') {
		t = t[1:]
	}
	prefixed := false
	if len(t) >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		t = t[2:]
		prefixed = true
	}
	if prefixed && len(t) > 0 && t[0] == '_' {
		t = t[1:]
	}
	if len(t) == 0 {
		return false
	}
	prevUnderscore := true // no leading underscore (past the prefix)
	for _, r := range t {
		if r == '_' {
			if prevUnderscore {
				return false
			}
			prevUnderscore = true
			continue
		}
		if !isHexDigit(r) {
			return false
		}
		prevUnderscore = false
	}
	return !prevUnderscore
}

func isHexDigit(r rune) bool {
	return (r >= '0' && r <= '9') || (r >= 'a' && r <= 'f') || (r >= 'A' && r <= 'F')
}

// unicodeDecimal returns the decimal value of a Unicode decimal digit (Nd).
// Unicode encodes every decimal digit set as a contiguous run from zero to
// nine, so the value is the distance from the start of the run.
func unicodeDecimal(r rune) (int, bool) {
	if !unicode.Is(unicode.Nd, r) {
		return 0, false
	}
	start := r
	for start > 0 && unicode.Is(unicode.Nd, start-1) {
		start--
	}
	return int(r-start) % 10, true
}
