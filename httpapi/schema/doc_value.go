package schema

// Doc is a request body as it was validated, for the handler to read
// instead of decoding the body a second time. Objects keep their keys in
// document order (a repeated key at its first position, with its last
// value, as Python's json and encoding/json both read it). The zero Doc
// is an absent value.
type Doc struct {
	v       any
	present bool
}

// ValidateDoc is ValidateJSON returning the document it validated.
func (s *Schema) ValidateDoc(body []byte) (Doc, error) {
	v, err := pyLoads(body)
	if err != nil {
		return Doc{}, err
	}
	if e := s.validate(v); e != nil {
		return Doc{}, e
	}
	return Doc{v: v, present: true}, nil
}

// DecodeDoc is DecodeJSON's document as a Doc.
func DecodeDoc(body []byte) (Doc, error) {
	v, err := pyLoads(body)
	if err != nil {
		return Doc{}, err
	}
	return Doc{v: v, present: true}, nil
}

// Kind names the value's JSON type as encoding/json's errors do:
// "object", "array", "string", "number", "bool" or "null" ("" when
// absent).
func (d Doc) Kind() string {
	switch d.v.(type) {
	case *object:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case *number:
		return "number"
	case bool:
		return "bool"
	}
	if d.present {
		return "null"
	}
	return ""
}

// NonFinite reports whether the document holds NaN or an infinity, which
// Python's json reads and no placement value can hold.
func (d Doc) NonFinite() bool { return nonFinite(d.v) }

func nonFinite(v any) bool {
	switch t := v.(type) {
	case *number:
		return t.lit == "NaN" || t.lit == "Infinity" || t.lit == "-Infinity"
	case *object:
		for _, e := range t.vals {
			if nonFinite(e) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if nonFinite(e) {
				return true
			}
		}
	}
	return false
}

// Present reports whether the value exists (a null does).
func (d Doc) Present() bool { return d.present }

// Null reports whether the value is a JSON null.
func (d Doc) Null() bool { return d.present && d.v == nil }

// Keys lists an object's keys in document order (nil for anything else).
func (d Doc) Keys() []string {
	if o, ok := d.v.(*object); ok {
		return o.keys
	}
	return nil
}

// Get is the member key of an object (absent when it has none, or d is no
// object).
func (d Doc) Get(key string) Doc {
	if o, ok := d.v.(*object); ok {
		if v, ok := o.get(key); ok {
			return Doc{v: v, present: true}
		}
	}
	return Doc{}
}

// Len is an array's length (0 for anything else); Index its i-th element.
func (d Doc) Len() int {
	a, _ := d.v.([]any)
	return len(a)
}

func (d Doc) Index(i int) Doc { return Doc{v: d.v.([]any)[i], present: true} }

// Text is a string's value.
func (d Doc) Text() (string, bool) {
	s, ok := d.v.(string)
	return s, ok
}

// Number is a number's literal, as written.
func (d Doc) Number() (string, bool) {
	if n, ok := d.v.(*number); ok {
		return n.lit, true
	}
	return "", false
}
