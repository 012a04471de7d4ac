package difftest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Request bodies are built as trees of these values, so that object key
// order is the generator's (it decides upstream's answers) and mutations
// can reach any node.
type (
	// obj is a JSON object in key order.
	obj struct{ fields []field }
	// lit is a JSON literal written as is: a number's exact text, or a
	// placeholder that becomes one ({{rpgen:...}}).
	lit   string
	field struct {
		k string
		v any
	}
)

func o(kv ...any) *obj {
	ob := &obj{}
	for i := 0; i+1 < len(kv); i += 2 {
		ob.fields = append(ob.fields, field{kv[i].(string), kv[i+1]})
	}
	return ob
}

func (ob *obj) set(k string, v any) *obj {
	for i := range ob.fields {
		if ob.fields[i].k == k {
			ob.fields[i].v = v
			return ob
		}
	}
	ob.fields = append(ob.fields, field{k, v})
	return ob
}

// encode writes v as JSON (placeholders included, so it is JSON only once
// they are filled in).
func encode(v any) string {
	var b strings.Builder
	encodeTo(&b, v)
	return b.String()
}

func encodeTo(b *strings.Builder, v any) {
	switch t := v.(type) {
	case *obj:
		b.WriteByte('{')
		for i, f := range t.fields {
			if i > 0 {
				b.WriteString(", ")
			}
			encodeTo(b, f.k)
			b.WriteString(": ")
			encodeTo(b, f.v)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			encodeTo(b, e)
		}
		b.WriteByte(']')
	case lit:
		b.WriteString(string(t))
	case nil:
		b.WriteString("null")
	default:
		j, err := json.Marshal(t)
		if err != nil {
			panic(fmt.Sprintf("difftest: cannot encode %T", v))
		}
		b.Write(j)
	}
}

// slot is one place in a body tree a mutation can change.
type slot struct {
	set func(any)
	// parent and key locate an object member (parent nil otherwise).
	parent *obj
	key    string
}

func slots(v any, set func(any), parent *obj, key string, out []slot) []slot {
	out = append(out, slot{set: set, parent: parent, key: key})
	switch t := v.(type) {
	case *obj:
		for i := range t.fields {
			out = slots(t.fields[i].v, func(n any) { t.fields[i].v = n }, t, t.fields[i].k, out)
		}
	case []any:
		for i := range t {
			out = slots(t[i], func(n any) { t[i] = n }, nil, "", out)
		}
	}
	return out
}

// Values that are the wrong type or out of range somewhere in most bodies.
var oddValues = []any{
	nil, true, false, "", "x", "not-a-uuid", 0, -1, 1, lit("1.5"), lit("2147483648"),
	lit("9223372036854775808"), lit("1e400"), lit("-0"), lit("1.0"), []any{}, o(), "CUSTOM_a", " ",
	"\u00e9t\u00e9", []any{"x"}, o("x", 1),
}

// mutate changes one random node of the tree rooted at *root: a wrong
// value, a member removed, or an unknown member added. It says which.
func mutate(r *rand.Rand, root *any) string {
	all := slots(*root, func(n any) { *root = n }, nil, "", nil)
	s := all[r.IntN(len(all))]
	switch k := r.IntN(10); {
	case k < 6:
		v := oddValues[r.IntN(len(oddValues))]
		s.set(v)
		return "value at " + s.key + " -> " + encode(v)
	case k < 8 && s.parent != nil:
		p := s.parent
		for i, f := range p.fields {
			if f.k == s.key {
				p.fields = append(p.fields[:i:i], p.fields[i+1:]...)
				break
			}
		}
		return "removed " + s.key
	default:
		if ob, ok := (*root).(*obj); ok && s.parent == nil {
			ob.fields = append(ob.fields, field{"bogus", 1})
			return "added bogus"
		}
		if s.parent != nil {
			s.parent.fields = append(s.parent.fields, field{"extra", "x"})
			return "added extra beside " + s.key
		}
		s.set(nil)
		return "null"
	}
}

// malform breaks a JSON text in one of the ways clients do, returning the
// new text and what was done.
func malform(r *rand.Rand, s string) (string, string) {
	switch r.IntN(13) {
	case 0:
		return "", "empty body"
	case 1:
		if len(s) > 1 {
			n := 1 + r.IntN(len(s)-1)
			return s[:n], "truncated"
		}
		return "{", "truncated"
	case 2:
		if i := strings.LastIndexAny(s, "}]"); i > 0 {
			return s[:i] + "," + s[i:], "trailing comma"
		}
	case 3:
		if i := strings.Index(s, ": "); i > 0 {
			return s[:i] + s[i+1:], "missing colon"
		}
	case 4:
		return s + " {}", "extra data"
	case 5:
		if i := strings.IndexByte(s, '"'); i >= 0 {
			return s[:i+1] + "\x01" + s[i+1:], "control character in string"
		}
	case 6:
		if i := strings.IndexByte(s, '"'); i >= 0 {
			return s[:i+1] + "ab\ncd" + s[i+1:], "newline in string"
		}
	case 7:
		return strings.ReplaceAll(s, `"`, `'`), "single quotes"
	case 8:
		if i := strings.Index(s, `", `); i > 0 {
			return s[:i+1] + s[i+2:], "missing comma"
		}
	case 9:
		if i := strings.IndexByte(s, '"'); i >= 0 {
			return s[:i+1] + `\q` + s[i+1:], "invalid escape"
		}
	case 10:
		return "\xff" + s, "invalid UTF-8"
	case 11:
		if i := strings.Index(s, ": "); i > 0 {
			return s[:i+2] + "NaN" + s[i+2:], "NaN literal"
		}
	case 12:
		return "\ufeff" + s, "byte order mark"
	}
	return s + "]", "stray bracket"
}
