package schema

import (
	"fmt"
	"math/big"
	"regexp"
	"slices"
)

// Schema is a compiled JSON schema. It is safe for concurrent use.
type Schema struct {
	root *node
}

// node is one (sub)schema: a dict, or a boolean schema.
type node struct {
	raw      any // *object, or bool for a boolean schema; rendered in errors
	kws      []*keyword
	hasType  bool
	typeList []string // value of "type", for best_match's _matches_type

	// For additionalProperties: the sibling "properties" names and
	// "patternProperties" patterns, and the latter's keys sorted (non-nil
	// when the schema has "patternProperties", which changes the message).
	propNames   map[string]struct{}
	patternRes  []patSchema
	patternKeys []string
}

// keyword is one validation keyword of a schema, in schema order (which is
// the order jsonschema iterates, and so the order errors are produced).
type keyword struct {
	name  string
	value any // raw value (validator_value)

	types    []string     // type
	sub      *node        // items, additionalProperties (schema form), not
	subs     []*node      // anyOf, oneOf, allOf
	props    []propSchema // properties
	pats     []patSchema  // patternProperties
	strs     []string     // required
	num      *number      // minimum, maximum, exclusive*, multipleOf
	count    int          // min/max Length/Items/Properties (clamped)
	re       *regexp.Regexp
	boolVal  bool // uniqueItems; additionalProperties/items boolean form
	isBool   bool // additionalProperties/items given as a boolean
	format   func(any) bool
	enumVals []any
}

type propSchema struct {
	name string
	node *node
}

type patSchema struct {
	pattern string
	re      *regexp.Regexp
	node    *node
}

// knownTypes are the type names of jsonschema's draft 2020-12 type checker.
const maxCount = 1 << 40

var (
	bigZero     = big.NewInt(0)
	bigMaxCount = big.NewInt(maxCount)
)

var knownTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// unsupported are keywords jsonschema 4.10.3 implements for draft 2020-12
// that this package does not; a schema using one fails to compile rather
// than being validated differently from upstream.
var unsupported = map[string]bool{
	"$ref": true, "$dynamicRef": true, "additionalItems": true,
	"contains": true, "dependentRequired": true, "dependentSchemas": true,
	"if": true, "prefixItems": true, "propertyNames": true,
	"unevaluatedItems": true, "unevaluatedProperties": true,
	"$schema": true,
}

// MustCompile is Compile for schemas fixed in the program text: it panics
// if the schema is invalid. Use it to initialise package-level variables.
func MustCompile(jsonText string) *Schema {
	s, err := Compile(jsonText)
	if err != nil {
		panic(err)
	}
	return s
}

// Compile parses a JSON schema written as JSON text. The key order of the
// text matters: jsonschema applies the keywords of a schema, and the entries
// of "properties" and "patternProperties", in the order of the Python dict
// literal, and that order decides which error is reported. Write schemas in
// the same order as upstream's dict literals (after any copy/modify steps).
//
// Numbers keep their Python type: 1 is an int, 1.0 and 3.40282e+38 are
// floats (it shows in messages: "is greater than the maximum of 1.0").
//
// Schemas are interpreted as jsonschema 4.10.3 interprets a schema without
// "$schema": as draft 2020-12 (so "exclusiveMinimum" is a number, 1.0 is an
// integer, "items" is a single schema).
//
// "format" is checked as jsonschema.FormatChecker() checks it, which is what
// upstream's query string validation (util.validate_query_params) uses. For
// request bodies use CompileBody: upstream's util.extract_json checks "uuid"
// differently.
func Compile(jsonText string) (*Schema, error) {
	return compile(jsonText, formatCheckers)
}

// compile compiles a schema checking "format" with the given checkers.
func compile(jsonText string, formats map[string]func(any) bool) (*Schema, error) {
	v, err := pyLoads([]byte(jsonText))
	if err != nil {
		return nil, fmt.Errorf("schema: invalid JSON: %w", err)
	}
	c := &compiler{formats: formats}
	n, err := c.compileNode(v, "schema")
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &Schema{root: n}, nil
}

type compiler struct {
	formats map[string]func(any) bool
}

func (c *compiler) compileNode(v any, where string) (*node, error) {
	if b, ok := v.(bool); ok {
		return &node{raw: b}, nil
	}
	obj, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("%s: a schema must be an object or a boolean, not %s", where, pyRepr(v, false))
	}
	n := &node{raw: obj}
	for _, name := range obj.keys {
		val := obj.vals[name]
		at := formatAsIndex(where, []any{name})
		if unsupported[name] {
			return nil, fmt.Errorf("%s: keyword %q is not supported", at, name)
		}
		kw := &keyword{name: name, value: val}
		var err error
		switch name {
		case "type":
			kw.types, err = compileTypes(val)
			n.hasType, n.typeList = true, kw.types
		case "properties":
			err = c.compileProperties(kw, val, at)
		case "patternProperties":
			err = c.compilePatternProperties(kw, val, at)
		case "additionalProperties", "items", "not":
			if b, isB := val.(bool); isB && name != "not" {
				kw.isBool, kw.boolVal = true, b
			} else {
				kw.sub, err = c.compileNode(val, at)
			}
		case "anyOf", "oneOf", "allOf":
			arr, isArr := val.([]any)
			if !isArr || len(arr) == 0 {
				err = fmt.Errorf("must be a non-empty array of schemas")
				break
			}
			for i, e := range arr {
				sub, serr := c.compileNode(e, formatAsIndex(at, []any{i}))
				if serr != nil {
					return nil, serr
				}
				kw.subs = append(kw.subs, sub)
			}
		case "required":
			kw.strs, err = stringList(val)
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
			num, isNum := val.(*number)
			if !isNum {
				err = fmt.Errorf("must be a number")
				break
			}
			if name == "multipleOf" {
				if c, _ := cmpNumbers(num, intNumber(bigZero)); c <= 0 {
					err = fmt.Errorf("must be greater than 0")
					break
				}
			}
			kw.num = num
		case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties":
			kw.count, err = nonNegativeCount(val)
		case "uniqueItems":
			b, isB := val.(bool)
			if !isB {
				err = fmt.Errorf("must be a boolean")
			}
			kw.boolVal = b
		case "pattern":
			s, isS := val.(string)
			if !isS {
				err = fmt.Errorf("must be a string")
				break
			}
			kw.re, err = compilePyRegex(s)
		case "format":
			s, isS := val.(string)
			if !isS {
				err = fmt.Errorf("must be a string")
				break
			}
			if kw.format = c.formats[s]; kw.format == nil {
				err = fmt.Errorf("format %q is not implemented", s)
			}
		case "enum":
			arr, isArr := val.([]any)
			if !isArr {
				err = fmt.Errorf("must be an array")
			}
			kw.enumVals = arr
		case "const":
			// nothing to compile
		default:
			continue // annotations and unknown keywords are ignored, as upstream
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		n.kws = append(n.kws, kw)
		switch name {
		case "properties":
			n.propNames = map[string]struct{}{}
			for _, p := range kw.props {
				n.propNames[p.name] = struct{}{}
			}
		case "patternProperties":
			n.patternRes = kw.pats
			n.patternKeys = val.(*object).sortedKeys()
			if n.patternKeys == nil {
				n.patternKeys = []string{}
			}
		}
	}
	return n, nil
}

func compileTypes(val any) ([]string, error) {
	var names []string
	switch t := val.(type) {
	case string:
		names = []string{t}
	case []any:
		var err error
		if names, err = stringList(t); err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("must not be empty")
		}
	default:
		return nil, fmt.Errorf("must be a string or an array of strings")
	}
	for _, name := range names {
		if !slices.Contains(knownTypes, name) {
			return nil, fmt.Errorf("unknown type %q", name)
		}
	}
	return names, nil
}

func (c *compiler) compileProperties(kw *keyword, val any, at string) error {
	obj, ok := val.(*object)
	if !ok {
		return fmt.Errorf("must be an object")
	}
	for _, k := range obj.keys {
		sub, err := c.compileNode(obj.vals[k], formatAsIndex(at, []any{k}))
		if err != nil {
			return err
		}
		kw.props = append(kw.props, propSchema{name: k, node: sub})
	}
	return nil
}

func (c *compiler) compilePatternProperties(kw *keyword, val any, at string) error {
	obj, ok := val.(*object)
	if !ok {
		return fmt.Errorf("must be an object")
	}
	for _, k := range obj.keys {
		re, err := compilePyRegex(k)
		if err != nil {
			return err
		}
		sub, err := c.compileNode(obj.vals[k], formatAsIndex(at, []any{k}))
		if err != nil {
			return err
		}
		kw.pats = append(kw.pats, patSchema{pattern: k, re: re, node: sub})
	}
	return nil
}

func stringList(val any) ([]string, error) {
	arr, ok := val.([]any)
	if !ok {
		return nil, fmt.Errorf("must be an array of strings")
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("must be an array of strings")
		}
		out = append(out, s)
	}
	return out, nil
}

func nonNegativeCount(val any) (int, error) {
	num, ok := val.(*number)
	if !ok || !num.isInteger() {
		return 0, fmt.Errorf("must be a non-negative integer")
	}
	if c, _ := cmpNumbers(num, intNumber(bigZero)); c < 0 {
		return 0, fmt.Errorf("must be a non-negative integer")
	}
	if c, _ := cmpNumbers(num, intNumber(bigMaxCount)); c > 0 {
		return maxCount, nil // beyond any real length; compares the same
	}
	return int(num.float64()), nil
}
