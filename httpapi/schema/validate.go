package schema

import (
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Validate validates instance against the schema, as
// jsonschema.validate(instance, schema, format_checker=FormatChecker())
// does: it returns nil, or the *ValidationError that
// jsonschema.exceptions.best_match picks among all errors.
//
// instance is a value as decoded by encoding/json with UseNumber:
// map[string]any, []any, string, json.Number, bool, nil. For convenience
// map[string]string, []string, Go integers and float64 (taken as a Python
// float) are accepted too; other types panic.
//
// A Go map has no key order, so the keys of map instances are taken in
// sorted order. jsonschema follows the order of the JSON document, which
// shows in the repr of objects inside messages and, when several keys fail
// alike, in which one is reported. Use ValidateJSON on request bodies to
// keep the document's order.
func (s *Schema) Validate(instance any) error {
	if e := s.validate(fromPlain(instance)); e != nil {
		return e
	}
	return nil
}

// ValidateJSON decodes body (see DecodeJSON) and validates it keeping the
// key order of the document, so that messages are exactly upstream's. It
// returns the decoded document (in DecodeJSON's form) when it is valid; else
// a *DecodeError if the body is not JSON, or a *ValidationError.
func (s *Schema) ValidateJSON(body []byte) (any, error) {
	v, err := pyLoads(body)
	if err != nil {
		return nil, err
	}
	if e := s.validate(v); e != nil {
		return nil, e
	}
	return toPlain(v), nil
}

// DecodeJSON decodes a request body as encoding/json with UseNumber does
// (objects map[string]any, arrays []any, numbers json.Number, null nil),
// rejecting anything but whitespace after the document and bodies that are
// not valid UTF-8. Errors are *DecodeError.
func DecodeJSON(body []byte) (any, error) {
	v, err := pyLoads(body)
	if err != nil {
		return nil, err
	}
	return toPlain(v), nil
}

func (s *Schema) validate(inst any) *ValidationError {
	return bestMatch(s.root.iterErrors(inst))
}

// iterErrors is Validator.iter_errors: every error of inst against n, in
// jsonschema's order.
func (n *node) iterErrors(inst any) []*ValidationError {
	if b, ok := n.raw.(bool); ok {
		if b {
			return nil
		}
		return []*ValidationError{{
			Message:  "False schema does not allow " + pyRepr(inst, false),
			set:      true,
			instance: inst,
			node:     n,
		}}
	}
	var out []*ValidationError
	for _, kw := range n.kws {
		errs := kw.apply(n, inst)
		for _, e := range errs {
			if !e.set {
				e.set, e.Keyword, e.instance, e.node = true, kw.name, inst, n
			}
			e.SchemaPath = slices.Insert(e.SchemaPath, 0, any(kw.name))
		}
		out = append(out, errs...)
	}
	return out
}

func (n *node) isValid(inst any) bool { return len(n.iterErrors(inst)) == 0 }

// descend is Validator.descend: path and schemaPath (when not nil) are
// prepended to the errors' paths.
func descend(sub *node, inst any, path, schemaPath any) []*ValidationError {
	errs := sub.iterErrors(inst)
	for _, e := range errs {
		if path != nil {
			e.Path = slices.Insert(e.Path, 0, path)
		}
		if schemaPath != nil {
			e.SchemaPath = slices.Insert(e.SchemaPath, 0, schemaPath)
		}
	}
	return errs
}

func newErr(msg string) *ValidationError { return &ValidationError{Message: msg} }

func one(msg string) []*ValidationError { return []*ValidationError{newErr(msg)} }

// apply runs one keyword (the functions of jsonschema/_validators.py). A
// keyword about one type of instance ignores the others.
func (kw *keyword) apply(n *node, inst any) []*ValidationError {
	switch kw.name {
	case "type":
		if slices.ContainsFunc(kw.types, func(t string) bool { return isType(inst, t) }) {
			return nil
		}
		reprs := make([]string, len(kw.types))
		for i, t := range kw.types {
			reprs[i] = pyStrRepr(t)
		}
		return one(pyRepr(inst, false) + " is not of type " + strings.Join(reprs, ", "))
	case "properties", "patternProperties", "additionalProperties", "required", "minProperties", "maxProperties":
		if obj, ok := inst.(*object); ok {
			return kw.applyObject(n, obj)
		}
	case "items", "minItems", "maxItems", "uniqueItems":
		if arr, ok := inst.([]any); ok {
			return kw.applyArray(arr)
		}
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		if num, ok := inst.(*number); ok {
			return kw.applyNumber(num)
		}
	case "minLength", "maxLength", "pattern":
		if s, ok := inst.(string); ok {
			return kw.applyString(s)
		}
	case "enum":
		if !enumContains(kw.enumVals, inst) {
			return one(pyRepr(inst, false) + " is not one of " + pyRepr(kw.value, false))
		}
	case "const":
		if !equal(inst, kw.value) {
			return one(pyRepr(kw.value, false) + " was expected")
		}
	case "format":
		if !kw.format(inst) {
			return one(pyRepr(inst, false) + " is not a " + pyRepr(kw.value, false))
		}
	case "allOf":
		var out []*ValidationError
		for i, sub := range kw.subs {
			out = append(out, descend(sub, inst, nil, i)...)
		}
		return out
	case "anyOf", "oneOf":
		return kw.applyAnyOneOf(inst)
	case "not":
		if kw.sub.isValid(inst) {
			return one(pyRepr(inst, false) + " should not be valid under " + pyRepr(kw.value, false))
		}
	}
	return nil
}

// applyObject runs a keyword about objects.
func (kw *keyword) applyObject(n *node, obj *object) []*ValidationError {
	var out []*ValidationError
	switch kw.name {
	case "properties":
		for _, p := range kw.props {
			if v, ok := obj.get(p.name); ok {
				out = append(out, descend(p.node, v, p.name, p.name)...)
			}
		}
	case "patternProperties":
		for _, p := range kw.pats {
			for _, k := range obj.keys {
				if p.re.MatchString(k) {
					out = append(out, descend(p.node, obj.vals[k], k, p.pattern)...)
				}
			}
		}
	case "additionalProperties":
		return kw.applyAdditionalProperties(n, obj)
	case "required":
		for _, p := range kw.strs {
			if !obj.has(p) {
				out = append(out, newErr(pyStrRepr(p)+" is a required property"))
			}
		}
	case "minProperties":
		if len(obj.keys) < kw.count {
			return one(pyRepr(obj, false) + " does not have enough properties")
		}
	case "maxProperties":
		if len(obj.keys) > kw.count {
			return one(pyRepr(obj, false) + " has too many properties")
		}
	}
	return out
}

func (kw *keyword) applyAdditionalProperties(n *node, obj *object) []*ValidationError {
	extras := n.additionalProperties(obj)
	if !kw.isBool {
		// Python iterates a set here (arbitrary order); use document order.
		var out []*ValidationError
		for _, k := range extras {
			out = append(out, descend(kw.sub, obj.vals[k], k, nil)...)
		}
		return out
	}
	if kw.boolVal || len(extras) == 0 {
		return nil
	}
	slices.Sort(extras)
	if n.patternKeys != nil {
		verb := "does"
		if len(extras) > 1 {
			verb = "do"
		}
		return one(joinReprs(extras) + " " + verb + " not match any of the regexes: " + joinReprs(n.patternKeys))
	}
	verb := "was"
	if len(extras) > 1 {
		verb = "were"
	}
	return one("Additional properties are not allowed (" + joinReprs(extras) + " " + verb + " unexpected)")
}

// applyArray runs a keyword about arrays.
func (kw *keyword) applyArray(arr []any) []*ValidationError {
	switch kw.name {
	case "items":
		if kw.isBool {
			if !kw.boolVal && len(arr) > 0 {
				return one("Expected at most 0 items, but found " + strconv.Itoa(len(arr)))
			}
			return nil
		}
		var out []*ValidationError
		for i, v := range arr {
			out = append(out, descend(kw.sub, v, i, nil)...)
		}
		return out
	case "minItems":
		if len(arr) < kw.count {
			return one(pyRepr(arr, false) + " is too short")
		}
	case "maxItems":
		if len(arr) > kw.count {
			return one(pyRepr(arr, false) + " is too long")
		}
	case "uniqueItems":
		if kw.boolVal && !uniq(arr) {
			return one(pyRepr(arr, false) + " has non-unique elements")
		}
	}
	return nil
}

// applyNumber runs a keyword about numbers.
func (kw *keyword) applyNumber(num *number) []*ValidationError {
	if kw.name == "multipleOf" {
		if !isMultipleOf(num, kw.num) {
			return one(num.repr() + " is not a multiple of " + kw.num.repr())
		}
		return nil
	}
	c, ok := cmpNumbers(num, kw.num)
	if !ok {
		return nil
	}
	var msg string
	switch {
	case kw.name == "minimum" && c < 0:
		msg = " is less than the minimum of "
	case kw.name == "maximum" && c > 0:
		msg = " is greater than the maximum of "
	case kw.name == "exclusiveMinimum" && c <= 0:
		msg = " is less than or equal to the minimum of "
	case kw.name == "exclusiveMaximum" && c >= 0:
		msg = " is greater than or equal to the maximum of "
	default:
		return nil
	}
	return one(num.repr() + msg + kw.num.repr())
}

// applyString runs a keyword about strings.
func (kw *keyword) applyString(s string) []*ValidationError {
	switch kw.name {
	case "minLength":
		if utf8.RuneCountInString(s) < kw.count {
			return one(pyStrRepr(s) + " is too short")
		}
	case "maxLength":
		if utf8.RuneCountInString(s) > kw.count {
			return one(pyStrRepr(s) + " is too long")
		}
	case "pattern":
		if !kw.re.MatchString(s) {
			return one(pyStrRepr(s) + " does not match " + pyRepr(kw.value, false))
		}
	}
	return nil
}

// applyAnyOneOf runs anyOf and oneOf: the first subschema inst is valid
// under decides, and for oneOf so do the later ones it is also valid
// under.
func (kw *keyword) applyAnyOneOf(inst any) []*ValidationError {
	var all []*ValidationError
	firstValid := -1
	for i, sub := range kw.subs {
		errs := descend(sub, inst, nil, i)
		if len(errs) == 0 {
			firstValid = i
			break
		}
		all = append(all, errs...)
	}
	if firstValid < 0 {
		e := newErr(pyRepr(inst, false) + " is not valid under any of the given schemas")
		e.context = all
		return []*ValidationError{e}
	}
	if kw.name == "anyOf" {
		return nil
	}
	var reprs []string
	for _, sub := range kw.subs[firstValid+1:] {
		if sub.isValid(inst) {
			reprs = append(reprs, pyRepr(sub.raw, false))
		}
	}
	if len(reprs) == 0 {
		return nil
	}
	reprs = append(reprs, pyRepr(kw.subs[firstValid].raw, false))
	return one(pyRepr(inst, false) + " is valid under each of " + strings.Join(reprs, ", "))
}

// additionalProperties is jsonschema._utils.find_additional_properties: the
// keys (in document order) neither in "properties" nor matching a pattern
// of "patternProperties".
func (n *node) additionalProperties(obj *object) []string {
	var extras []string
	for _, k := range obj.keys {
		if _, ok := n.propNames[k]; ok {
			continue
		}
		if slices.ContainsFunc(n.patternRes, func(p patSchema) bool { return p.re.MatchString(k) }) {
			continue
		}
		extras = append(extras, k)
	}
	return extras
}

func joinReprs(ss []string) string {
	reprs := make([]string, len(ss))
	for i, s := range ss {
		reprs[i] = pyStrRepr(s)
	}
	return strings.Join(reprs, ", ")
}

// isType is jsonschema's draft 2020-12 type checker.
func isType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(*object)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(*number)
		return ok
	case "integer":
		n, ok := v.(*number)
		return ok && n.isInteger()
	}
	return false
}

// pyEq is Python's == between JSON values: bools are the ints 0 and 1,
// ints and floats compare by value, containers compare element-wise.
func pyEq(a, b any) bool {
	if na, ok := asNumber(a); ok {
		nb, ok := asNumber(b)
		if !ok {
			return false
		}
		c, ok := cmpNumbers(na, nb)
		return ok && c == 0
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && slicesEqual(x, y, pyEq)
	case *object:
		y, ok := b.(*object)
		return ok && mapsEqual(x, y, pyEq)
	}
	return false
}

var (
	pyZero = intNumber(big.NewInt(0))
	pyOne  = intNumber(big.NewInt(1))
)

// asNumber treats a bool as the int it is in Python.
func asNumber(v any) (*number, bool) {
	switch t := v.(type) {
	case *number:
		return t, true
	case bool:
		if t {
			return pyOne, true
		}
		return pyZero, true
	}
	return nil, false
}

// enumContains is the enum keyword's test:
//
//	if instance == 0 or instance == 1:
//	    unbooled = unbool(instance)
//	    ok = any(unbooled == unbool(each) for each in enums)
//	else:
//	    ok = instance in enums
func enumContains(enums []any, inst any) bool {
	if pyEq(inst, pyZero) || pyEq(inst, pyOne) {
		for _, each := range enums {
			_, instBool := inst.(bool)
			_, eachBool := each.(bool)
			if instBool || eachBool {
				if instBool && eachBool && inst == each {
					return true
				}
				continue
			}
			if pyEq(inst, each) {
				return true
			}
		}
		return false
	}
	return slices.ContainsFunc(enums, func(each any) bool { return pyEq(inst, each) })
}

// equal is jsonschema._utils.equal: like Python == except that bools are
// never equal to numbers, at any depth.
func equal(a, b any) bool {
	if sa, ok := a.(string); ok {
		sb, ok := b.(string)
		return ok && sa == sb
	}
	if _, ok := b.(string); ok {
		return false
	}
	if la, ok := a.([]any); ok {
		lb, ok := b.([]any)
		return ok && len(la) == len(lb) && slicesEqual(la, lb, equal)
	}
	if oa, ok := a.(*object); ok {
		ob, ok := b.(*object)
		return ok && mapsEqual(oa, ob, equal)
	}
	if ba, ok := a.(bool); ok {
		bb, ok := b.(bool)
		return ok && ba == bb
	}
	if _, ok := b.(bool); ok {
		return false
	}
	return pyEq(a, b)
}

func slicesEqual(a, b []any, eq func(a, b any) bool) bool {
	for i := range a {
		if !eq(a[i], b[i]) {
			return false
		}
	}
	return true
}

func mapsEqual(a, b *object, eq func(a, b any) bool) bool {
	if len(a.keys) != len(b.keys) {
		return false
	}
	for _, k := range a.keys {
		vb, ok := b.vals[k]
		if !ok || !eq(a.vals[k], vb) {
			return false
		}
	}
	return true
}

// uniq is jsonschema._utils.uniq: whether no two elements are equal().
func uniq(arr []any) bool {
	for i := range arr {
		for j := 0; j < i; j++ {
			if equal(arr[i], arr[j]) {
				return false
			}
		}
	}
	return true
}

// isMultipleOf is the multipleOf keyword's test.
func isMultipleOf(inst, dB *number) bool {
	if dB.isFloat {
		q := inst.float64() / dB.f
		if math.IsInf(q, 0) {
			// Python falls back on exact Fraction arithmetic on overflow.
			if infSign(inst) != 0 {
				return false
			}
			r := new(big.Rat).Quo(inst.rat(), dB.rat())
			return r.IsInt()
		}
		return !math.IsNaN(q) && q == math.Trunc(q)
	}
	if !inst.isFloat {
		return new(big.Int).Rem(inst.bigInt(), dB.bigInt()).Sign() == 0
	}
	return math.Mod(inst.f, dB.float64()) == 0
}
