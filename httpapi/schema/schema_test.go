package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// The expectations in cases_gen_test.go were produced by running Python
// jsonschema 4.10.3 (and CPython 3.11's repr/pprint) on the same schemas and
// instances; see testdata/gen_cases.py, which regenerates that file. The
// schemas named there without a "g_" prefix are upstream Placement's own
// schema dicts, serialised in their dict order. Request body schemas are
// validated as upstream's util.extract_json does (its FormatChecker checks
// "uuid" with oslo's is_uuid_like) and compiled here with MustCompileBody;
// query string schemas as util.validate_query_params does, with MustCompile.

type pyCase struct {
	name, schema, instance string
	// Empty when Python found the instance valid.
	message, keyword, want string
	path, schemaPath       []any
}

type reprCase struct {
	json, repr, pformat string
}

type uuidCase struct {
	s    string
	ok   bool // jsonschema's "uuid" format (query strings)
	like bool // oslo's is_uuid_like (request bodies)
}

var (
	compiledOnce sync.Once
	compiled     map[string]*Schema
)

func pySchema(t *testing.T, name string) *Schema {
	t.Helper()
	compiledOnce.Do(func() {
		compiled = map[string]*Schema{}
		for n, text := range pySchemas {
			if pyBodySchemas[n] {
				compiled[n] = MustCompileBody(text)
			} else {
				compiled[n] = MustCompile(text)
			}
		}
	})
	s, ok := compiled[name]
	if !ok {
		t.Fatalf("no schema %q", name)
	}
	return s
}

func TestPythonCases(t *testing.T) {
	for _, c := range pyCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := pySchema(t, c.schema)
			got, err := s.ValidateJSON([]byte(c.instance))
			if c.want == "" {
				if err != nil {
					t.Fatalf("valid upstream, got error:\n%v", err)
				}
				want, _ := DecodeJSON([]byte(c.instance))
				if !reflect.DeepEqual(got, want) {
					t.Errorf("returned document %#v, want %#v", got, want)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want a *ValidationError, got %T %v", err, err)
			}
			if got != nil {
				t.Errorf("returned a document with an error: %#v", got)
			}
			if ve.Error() != c.want {
				t.Errorf("Error() mismatch\n--- got:\n%s\n--- want:\n%s", ve.Error(), c.want)
			}
			if ve.Message != c.message {
				t.Errorf("Message = %q, want %q", ve.Message, c.message)
			}
			if ve.Keyword != c.keyword {
				t.Errorf("Keyword = %q, want %q", ve.Keyword, c.keyword)
			}
			if !pathEqual(ve.Path, c.path) {
				t.Errorf("Path = %#v, want %#v", ve.Path, c.path)
			}
			if !pathEqual(ve.SchemaPath, c.schemaPath) {
				t.Errorf("SchemaPath = %#v, want %#v", ve.SchemaPath, c.schemaPath)
			}
		})
	}
}

func pathEqual(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Instances given as plain Go values (map keys are taken in sorted order):
// for these the order does not change Python's answer.
func TestValidatePlainValues(t *testing.T) {
	rp := pySchema(t, "rp_post")
	inv := pySchema(t, "inventory_put")
	cases := []struct {
		name     string
		schema   *Schema
		instance any
		want     string // full Error(); "" for valid
	}{
		{"valid", rp, map[string]any{"name": "rp1"}, ""},
		{"json.Number int", inv, map[string]any{
			"resource_provider_generation": json.Number("1"),
			"inventories": map[string]any{
				"VCPU": map[string]any{"total": json.Number("0")},
			},
		}, "0 is less than the minimum of 1\n\n" +
			"Failed validating 'minimum' in schema['properties']['inventories']['patternProperties']['^[A-Z0-9_]+$']['properties']['total']:\n" +
			"    {'maximum': 2147483647, 'minimum': 1, 'type': 'integer'}\n\n" +
			"On instance['inventories']['VCPU']['total']:\n" +
			"    0"},
		{"go int", inv, map[string]any{
			"resource_provider_generation": 1,
			"inventories":                  map[string]any{"VCPU": map[string]any{"total": 0}},
		}, "0 is less than the minimum of 1\n\n" +
			"Failed validating 'minimum' in schema['properties']['inventories']['patternProperties']['^[A-Z0-9_]+$']['properties']['total']:\n" +
			"    {'maximum': 2147483647, 'minimum': 1, 'type': 'integer'}\n\n" +
			"On instance['inventories']['VCPU']['total']:\n" +
			"    0"},
		{"query map[string]string", pySchema(t, "ac_get_1_36"),
			map[string]string{"resources": "VCPU:1", "group_policy": "bogus"},
			"'bogus' is not one of ['none', 'isolate']\n\n" +
				"Failed validating 'enum' in schema['properties']['group_policy']:\n" +
				"    {'enum': ['none', 'isolate'], 'type': 'string'}\n\n" +
				"On instance['group_policy']:\n" +
				"    'bogus'"},
		{"null", rp, nil, "None is not of type 'object'\n\n" +
			"Failed validating 'type' in schema:\n" +
			"    {'additionalProperties': False,\n" +
			"     'properties': {'name': {'maxLength': 200, 'type': 'string'},\n" +
			"                    'uuid': {'format': 'uuid', 'type': 'string'}},\n" +
			"     'required': ['name'],\n" +
			"     'type': 'object'}\n\n" +
			"On instance:\n" +
			"    None"},
		{"float64 is a Python float", MustCompile(`{"type": "string"}`), 5.0,
			"5.0 is not of type 'string'\n\n" +
				"Failed validating 'type' in schema:\n" +
				"    {'type': 'string'}\n\n" +
				"On instance:\n" +
				"    5.0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.schema.Validate(c.instance)
			if c.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", err.Error(), c.want)
			}
		})
	}
}

func TestValidateNilIsUntypedNil(t *testing.T) {
	if err := MustCompile(`{}`).Validate(map[string]any{}); err != nil {
		t.Fatalf("got %#v, want untyped nil", err)
	}
}

func TestPythonReprAndPprint(t *testing.T) {
	for _, c := range pyReprs {
		v, err := pyLoads([]byte(c.json))
		if err != nil {
			t.Fatalf("decode %s: %v", c.json, err)
		}
		if got := pyRepr(v, false); got != c.repr {
			t.Errorf("repr(%s)\n got %s\nwant %s", c.json, got, c.repr)
		}
		if got := pformat(v); got != c.pformat {
			t.Errorf("pformat(%s)\n--- got:\n%s\n--- want:\n%s", c.json, got, c.pformat)
		}
	}
}

func TestUUIDFormat(t *testing.T) {
	for _, c := range pyUUIDs {
		if got := isUUID(c.s); got != c.ok {
			t.Errorf("isUUID(%q) = %v, want %v", c.s, got, c.ok)
		}
		if got := isUUIDLike(c.s); got != c.like {
			t.Errorf("isUUIDLike(%q) = %v, want %v", c.s, got, c.like)
		}
		if got := UUIDLikeHex(c.s); (got != "") != c.like || (got != "" && len(got) != 32) {
			t.Errorf("UUIDLikeHex(%q) = %q, want ok=%v", c.s, got, c.like)
		}
	}
	if !isUUID(json.Number("5")) || !isUUID(nil) {
		t.Error("non-strings must pass jsonschema's uuid format, as upstream")
	}
	if isUUIDLike(json.Number("5")) || isUUIDLike(nil) {
		t.Error("non-strings must fail is_uuid_like, as upstream")
	}
	if got := UUIDLikeHex("{5F9588DE-079D-462A-A459-408524AB9B60}"); got != "5f9588de079d462aa459408524ab9b60" {
		t.Errorf("UUIDLikeHex = %q", got)
	}
}

func TestDecodeJSON(t *testing.T) {
	v, err := DecodeJSON([]byte(` {"b": [1, 2.5, "x", null, true], "a": {}, "b": {"c": 1}} `))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"b": map[string]any{"c": json.Number("1")}, "a": map[string]any{}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("got %#v, want %#v", v, want)
	}
	v, err = DecodeJSON([]byte(`[1, 2.5e3, "x", null, false]`))
	if err != nil {
		t.Fatal(err)
	}
	wantList := []any{json.Number("1"), json.Number("2.5e3"), "x", nil, false}
	if !reflect.DeepEqual(v, wantList) {
		t.Errorf("got %#v, want %#v", v, wantList)
	}
	for _, bad := range []string{
		``, ` `, `{`, `{"a": 1}}`, `{"a": 1} {}`, `[1,]`, `{"a" 1}`, `{1: 2}`,
		`nul`, `"abc`, "\"\xff\"", `{"a": 1} x`, `01`,
	} {
		_, err := DecodeJSON([]byte(bad))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("DecodeJSON(%q) = %v, want a *DecodeError", bad, err)
		}
		_, err = MustCompile(`{}`).ValidateJSON([]byte(bad))
		if !errors.As(err, &de) {
			t.Errorf("ValidateJSON(%q) = %v, want a *DecodeError", bad, err)
		}
	}
}

// Duplicate keys: Python keeps the first position and the last value.
func TestDuplicateKeysOrder(t *testing.T) {
	s := MustCompile(`{"type": "array"}`)
	_, err := s.ValidateJSON([]byte(`{"b": 1, "a": 2, "b": 3}`))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v", err)
	}
	if want := "{'b': 3, 'a': 2} is not of type 'array'"; ve.Message != want {
		t.Errorf("got %q, want %q", ve.Message, want)
	}
}

func TestPyRegex(t *testing.T) {
	cases := []struct {
		pattern, s string
		match      bool
	}{
		{`^[A-Z0-9_]+$`, "CUSTOM_FOO", true},
		{`^[A-Z0-9_]+$`, "CUSTOM_FOO\n", true}, // Python's $ before a final \n
		{`^[A-Z0-9_]+$`, "CUSTOM_FOO\n\n", false},
		{`^[A-Z0-9_]+\Z`, "CUSTOM_FOO\n", false},
		{`^[A-Z0-9_]+$|^all|^unknown$`, "allx", true},
		{`^[0-9a-fA-F-]{36}$`, "5f9588de-079d-462a-a459-408524ab9b60", true},
		{`[a-zA-Z0-9_-]{1,64}`, "@@x", true},
		{`^\d+$`, "١٢٣", true},
		{`^\w+$`, "héllo_1", true},
		{`^\W$`, "-", true},
		{`^[\w.]+$`, "a.b", true},
		{`^\s$`, "\u00a0", true},
		{`^\s$`, "\x1c", true},
		{`^\S$`, " ", false},
		{`[$]`, "a$b", true},
		{`^[]a]+$`, "]a]", true},
		{`^[^]a]+$`, "bc", true},
		{`^a\$`, "a$", true},
	}
	for _, c := range cases {
		re, err := compilePyRegex(c.pattern)
		if err != nil {
			t.Errorf("compile %q: %v", c.pattern, err)
			continue
		}
		if got := re.MatchString(c.s); got != c.match {
			t.Errorf("re.search(%q, %q) = %v, want %v (Go: %s)", c.pattern, c.s, got, c.match, re)
		}
	}
	for _, bad := range []string{`(?=a)`, `(a)\1`, `[\W]`, `[a`, `\`} {
		if _, err := compilePyRegex(bad); err == nil {
			t.Errorf("compile %q: want an error", bad)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, bad := range []string{
		``, `[]`, `5`, `{"type": "float"}`, `{"type": []}`, `{"type": 5}`,
		`{"properties": []}`, `{"properties": {"a": 5}}`,
		`{"required": "a"}`, `{"required": [1]}`, `{"minimum": "1"}`,
		`{"maxLength": -1}`, `{"maxLength": 1.5}`, `{"pattern": "(?=x)"}`,
		`{"patternProperties": {"(": {}}}`, `{"format": "date-time"}`,
		`{"$ref": "#/definitions/x"}`, `{"anyOf": []}`, `{"items": [{}]}`,
		`{"$schema": "http://json-schema.org/draft-04/schema#"}`,
		`{"uniqueItems": 1}`, `{"enum": 1}`, `{"multipleOf": 0}`,
		`{"properties": {"a": {"not": 5}}}`,
	} {
		if _, err := Compile(bad); err == nil {
			t.Errorf("Compile(%s): want an error", bad)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("MustCompile did not panic")
		}
	}()
	MustCompile(`{"type": "float"}`)
}

func TestCompileIgnoresAnnotations(t *testing.T) {
	s := MustCompile(`{"description": "x", "title": "t", "examples": [1], "type": "integer",
		"additionalProperties": false}`)
	if err := s.Validate(json.Number("3")); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentUse(t *testing.T) {
	s := pySchema(t, "alloc_1_38")
	body := []byte(`{"allocations": {}, "consumer_generation": null, "project_id": "p", "user_id": "u", "consumer_type": "instance"}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				_, err := s.ValidateJSON(body)
				if err == nil || !strings.Contains(err.Error(), "'instance' does not match '^[A-Z0-9_]+$'") {
					t.Errorf("got %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Malformed bodies are reported in the words of Python 3.11's json module
// after a strict UTF-8 decode, as upstream's jsonutils.loads reports them
// (the expected messages are Python's own).
func TestPythonJSONErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"", "Expecting value: line 1 column 1 (char 0)"},
		{" ", "Expecting value: line 1 column 2 (char 1)"},
		{"\t", "Expecting value: line 1 column 2 (char 1)"},
		{"{", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"},
		{"[", "Expecting value: line 1 column 2 (char 1)"},
		{"{\"a\": 1,}", "Expecting property name enclosed in double quotes: line 1 column 9 (char 8)"},
		{"[1, 2,]", "Expecting value: line 1 column 7 (char 6)"},
		{"{\"a\" 1}", "Expecting ':' delimiter: line 1 column 6 (char 5)"},
		{"{\"a\"}", "Expecting ':' delimiter: line 1 column 5 (char 4)"},
		{"{\"a\": 1} x", "Extra data: line 1 column 10 (char 9)"},
		{"{\"a\": 1}{}", "Extra data: line 1 column 9 (char 8)"},
		{"{\"a\": 1}\n\n x", "Extra data: line 3 column 2 (char 11)"},
		{"{\"a\": \"b\x01c\"}", "Invalid control character at: line 1 column 9 (char 8)"},
		{"{\"a\": \"b\ncd\"}", "Invalid control character at: line 1 column 9 (char 8)"},
		{"{\"a\": \"\x1f\"}", "Invalid control character at: line 1 column 8 (char 7)"},
		{"{\"a\": \"unterminated", "Unterminated string starting at: line 1 column 7 (char 6)"},
		{"\"a\\", "Unterminated string starting at: line 1 column 1 (char 0)"},
		{"{\"a\": \"x\\q\"}", "Invalid \\escape: line 1 column 9 (char 8)"},
		{"{\"a\": \"\\u12\"}", "Invalid \\uXXXX escape: line 1 column 9 (char 8)"},
		{"{\"a\": \"\\u12zz\"}", "Invalid \\uXXXX escape: line 1 column 9 (char 8)"},
		{"{\"a\": \"\\ud800\\uZZZZ\"}", "Invalid \\uXXXX escape: line 1 column 15 (char 14)"},
		{"{'a': 1}", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"},
		{"{\"a\": 1 \"b\": 2}", "Expecting ',' delimiter: line 1 column 9 (char 8)"},
		{"[1 2]", "Expecting ',' delimiter: line 1 column 4 (char 3)"},
		{"{\"a\": }", "Expecting value: line 1 column 7 (char 6)"},
		{"{\"a\":", "Expecting value: line 1 column 6 (char 5)"},
		{"[1,", "Expecting value: line 1 column 4 (char 3)"},
		{"nul", "Expecting value: line 1 column 1 (char 0)"},
		{"{\"a\": tru}", "Expecting value: line 1 column 7 (char 6)"},
		{"-", "Expecting value: line 1 column 1 (char 0)"},
		{"{\"a\":-}", "Expecting value: line 1 column 6 (char 5)"},
		{"01", "Extra data: line 1 column 2 (char 1)"},
		{"1.", "Extra data: line 1 column 2 (char 1)"},
		{"1e", "Extra data: line 1 column 2 (char 1)"},
		{".5", "Expecting value: line 1 column 1 (char 0)"},
		{"{\"a\": 1.5e}", "Expecting ',' delimiter: line 1 column 10 (char 9)"},
		{"{,}", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"},
		{"{\"a\": 1,,}", "Expecting property name enclosed in double quotes: line 1 column 9 (char 8)"},
		{"[,1]", "Expecting value: line 1 column 2 (char 1)"},
		{"{\"a\": [}", "Expecting value: line 1 column 8 (char 7)"},
		{"{\"a\": \"b\"\n,\n}", "Expecting property name enclosed in double quotes: line 3 column 1 (char 12)"},
		{"\xef\xbb\xbf{\"a\": 1}", "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"},
		{"\xff{\"a\": 1}", "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"},
		{"\x80", "'utf-8' codec can't decode byte 0x80 in position 0: invalid start byte"},
		{"{\"a\": \"\xc3\"}", "'utf-8' codec can't decode byte 0xc3 in position 7: invalid continuation byte"},
		{"{\"a\": \"\xe2\x82\"}", "'utf-8' codec can't decode bytes in position 7-8: invalid continuation byte"},
		{"{\"a\": \"\xed\xa0\x80\"}", "'utf-8' codec can't decode byte 0xed in position 7: invalid continuation byte"},
		{"{\"a\": \"\xf4\x90\x80\x80\"}", "'utf-8' codec can't decode byte 0xf4 in position 7: invalid continuation byte"},
		{"{\"a\": \"\xc0\xaf\"}", "'utf-8' codec can't decode byte 0xc0 in position 7: invalid start byte"},
		{"{\"a\": \"\xe2(\xa1\"}", "'utf-8' codec can't decode byte 0xe2 in position 7: invalid continuation byte"},
		{"{\"a\": \"\xf0\x9f\x98\"}", "'utf-8' codec can't decode bytes in position 7-9: invalid continuation byte"},
		{"{\"a\": \"\xe0\x80\"}", "'utf-8' codec can't decode byte 0xe0 in position 7: invalid continuation byte"},
		{"ab\xc3", "'utf-8' codec can't decode byte 0xc3 in position 2: unexpected end of data"},
		{"ab\xe2\x82", "'utf-8' codec can't decode bytes in position 2-3: unexpected end of data"},
		{"ab\xf0\x9f\x98", "'utf-8' codec can't decode bytes in position 2-4: unexpected end of data"},
		{"{\"\xc3\xa9\": 1, \"b\": [1, 2,]}", "Expecting value: line 1 column 21 (char 20)"},
		{"\n\n  {\"a\": [1,\n 2,]}", "Expecting value: line 4 column 4 (char 17)"},
		{"{\"\xc3\xa9\": \"\xc3\xa9\x01\"}", "Invalid control character at: line 1 column 9 (char 8)"},
		{"\xe2\x98\x83\n\xe2\x98\x83 x", "Expecting value: line 1 column 1 (char 0)"},
	} {
		_, err := DecodeJSON([]byte(c.body))
		var de *DecodeError
		if !errors.As(err, &de) || err.Error() != c.want {
			t.Errorf("DecodeJSON(%q) = %v, want %q", c.body, err, c.want)
		}
	}
}

// Python's json accepts NaN and infinities as floats, which the schema
// then sees as such.
func TestPythonJSONNonFinite(t *testing.T) {
	for body, want := range map[string]string{
		`{"a": NaN}`:       "nan is not of type 'integer'",
		`{"a": Infinity}`:  "inf is not of type 'integer'",
		`{"a": -Infinity}`: "-inf is not of type 'integer'",
		`{"a": 1e400}`:     "inf is not of type 'integer'",
	} {
		_, err := MustCompile(`{"properties": {"a": {"type": "integer"}}}`).ValidateJSON([]byte(body))
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Message != want {
			t.Errorf("ValidateJSON(%s) = %v, want %q", body, err, want)
		}
	}
	if _, err := DecodeJSON([]byte(`[NaN, -Infinity, "\ud83d\ude00"]`)); err != nil {
		t.Errorf("DecodeJSON: %v", err)
	}
}
