package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// The validator works on its own value model, which mirrors what Python's
// json.loads produces, because that is what jsonschema sees upstream:
//
//	nil      None
//	bool     True / False
//	string   str
//	*number  int (arbitrary precision) or float (float64)
//	[]any    list
//	*object  dict (insertion ordered)
//
// Values are immutable once built.

// object is a JSON object that remembers key insertion order, like a Python
// dict built by json.loads. A duplicated key keeps the position of its first
// occurrence and the value of its last one, as Python does.
type object struct {
	keys []string
	vals map[string]any
}

// newObject is an empty object; its map is made by the first set, so that
// a body of many empty objects costs little more than its bytes.
func newObject() *object { return &object{} }

func (o *object) set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) has(k string) bool {
	_, ok := o.vals[k]
	return ok
}

func (o *object) sortedKeys() []string {
	ks := append([]string(nil), o.keys...)
	sort.Strings(ks) // byte order of UTF-8 == code point order, as Python's sorted()
	return ks
}

// number is a JSON number: a Python int when the literal has neither a
// fraction nor an exponent (json.loads rule), a Python float otherwise.
type number struct {
	lit     string  // literal as written (returned to callers as json.Number)
	isFloat bool    // Python float rather than int
	f       float64 // when isFloat; may be ±Inf ("1e400" is inf in Python)
}

// bigInt is an integer's value. A number keeps only its literal (a body
// of many numbers then costs less), read when a keyword compares it.
func (n *number) bigInt() *big.Int {
	i, _ := new(big.Int).SetString(n.lit, 10)
	return i
}

func parseNumber(lit string) (*number, error) {
	if strings.ContainsAny(lit, ".eE") {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, err
		}
		return &number{lit: lit, isFloat: true, f: f}, nil
	}
	if _, ok := new(big.Int).SetString(lit, 10); !ok {
		return nil, fmt.Errorf("invalid number literal %q", lit)
	}
	return &number{lit: lit}, nil
}

func intNumber(i *big.Int) *number { return &number{lit: i.String()} }

func floatNumber(f float64) *number {
	return &number{lit: strconv.FormatFloat(f, 'g', -1, 64), isFloat: true, f: f}
}

// isInteger reports whether jsonschema 4.x (draft 6 and later) considers n an
// integer: a Python int, or a float whose value is integral (1.0 is one).
func (n *number) isInteger() bool {
	if !n.isFloat {
		return true
	}
	return !math.IsInf(n.f, 0) && !math.IsNaN(n.f) && n.f == math.Trunc(n.f)
}

// cmpNumbers compares exactly, as Python compares int and float exactly.
// ok is false when either side is NaN (every comparison is then False).
func cmpNumbers(a, b *number) (c int, ok bool) {
	if (a.isFloat && math.IsNaN(a.f)) || (b.isFloat && math.IsNaN(b.f)) {
		return 0, false
	}
	ai, bi := infSign(a), infSign(b)
	if ai != 0 || bi != 0 {
		switch {
		case ai < bi:
			return -1, true
		case ai > bi:
			return 1, true
		}
		return 0, true
	}
	if !a.isFloat && !b.isFloat {
		return a.bigInt().Cmp(b.bigInt()), true
	}
	return a.rat().Cmp(b.rat()), true
}

func infSign(n *number) int {
	if n.isFloat && math.IsInf(n.f, 0) {
		if n.f > 0 {
			return 1
		}
		return -1
	}
	return 0
}

func (n *number) rat() *big.Rat {
	if n.isFloat {
		return new(big.Rat).SetFloat64(n.f) // exact; callers exclude ±Inf and NaN
	}
	return new(big.Rat).SetInt(n.bigInt())
}

func (n *number) float64() float64 {
	if n.isFloat {
		return n.f
	}
	f, _ := new(big.Float).SetInt(n.bigInt()).Float64()
	return f
}

// DecodeError reports a request body that is not well-formed JSON, in the
// words of Python's json module (upstream answers "Malformed JSON: ...").
type DecodeError struct {
	Err error
}

func (e *DecodeError) Error() string { return e.Err.Error() }
func (e *DecodeError) Unwrap() error { return e.Err }

// maxDepth bounds nesting of decoded documents (Python would hit its
// recursion limit long before this).
const maxDepth = 10000

// toPlain converts an internal value to the encoding/json (UseNumber) form.
func toPlain(v any) any {
	switch t := v.(type) {
	case *object:
		m := make(map[string]any, len(t.keys))
		for _, k := range t.keys {
			m[k] = toPlain(t.vals[k])
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = toPlain(e)
		}
		return out
	case *number:
		return json.Number(t.lit)
	}
	return v
}

// fromPlain converts a caller-supplied Go value to the internal model.
// Objects given as Go maps have no order; their keys are taken in sorted
// order (see Schema.Validate).
func fromPlain(v any) any {
	switch t := v.(type) {
	case nil, bool, string:
		return t
	case *object, *number:
		return t
	case json.Number:
		n, err := parseNumber(string(t))
		if err != nil {
			panic(fmt.Sprintf("schema: invalid json.Number %q", string(t)))
		}
		return n
	case float64:
		return floatNumber(t)
	case float32:
		return floatNumber(float64(t))
	case int:
		return intNumber(big.NewInt(int64(t)))
	case int64:
		return intNumber(big.NewInt(t))
	case int32:
		return intNumber(big.NewInt(int64(t)))
	case uint64:
		return intNumber(new(big.Int).SetUint64(t))
	case *big.Int:
		return intNumber(new(big.Int).Set(t))
	case map[string]any:
		o := newObject()
		for _, k := range sortedMapKeys(t) {
			o.set(k, fromPlain(t[k]))
		}
		return o
	case map[string]string:
		o := newObject()
		for _, k := range sortedMapKeys(t) {
			o.set(k, t[k])
		}
		return o
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = fromPlain(e)
		}
		return out
	case []string:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = e
		}
		return out
	}
	panic(fmt.Sprintf("schema: unsupported instance type %s", reflect.TypeOf(v)))
}

func sortedMapKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// MaxIntDigits is Python's limit on the digits of an integer read from
// text (sys.get_int_max_str_digits(), 4300 by default): int() and
// json.loads refuse longer ones at once, before converting anything.
const MaxIntDigits = 4300

// IntDigitsError is Python's ValueError for an integer literal of that
// many decimal digits (sign and underscores not counted), nil within
// MaxIntDigits.
func IntDigitsError(digits int) error {
	if digits <= MaxIntDigits {
		return nil
	}
	return fmt.Errorf("Exceeds the limit (%d digits) for integer string conversion: value has %d digits; use sys.set_int_max_str_digits() to increase the limit", MaxIntDigits, digits)
}
