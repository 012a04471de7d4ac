package schema

import "strings"

// Request bodies and query strings check format "uuid" differently
// upstream. util.extract_json validates bodies with a module-level
// FormatChecker whose "uuid" check is replaced by oslo's
// uuidutils.is_uuid_like (@_FORMAT_CHECKER.checks('uuid')), which accepts
// UUIDs without dashes and rejects non-strings; util.validate_query_params
// uses a fresh jsonschema.FormatChecker(), whose "uuid" is jsonschema's
// is_uuid (see isUUID), as Compile does.
var bodyFormatCheckers = map[string]func(any) bool{
	"uuid": isUUIDLike,
}

// CompileBody is Compile for request body schemas: format "uuid" is checked
// as upstream's util.extract_json checks it (oslo's is_uuid_like).
func CompileBody(jsonText string) (*Schema, error) {
	return compile(jsonText, bodyFormatCheckers)
}

// MustCompileBody is CompileBody that panics on an invalid schema, for
// package-level variables.
func MustCompileBody(jsonText string) *Schema {
	s, err := CompileBody(jsonText)
	if err != nil {
		panic(err)
	}
	return s
}

// isUUIDLike is oslo_utils.uuidutils.is_uuid_like:
//
//	try:
//	    return str(uuid.UUID(val)).replace('-', '') == _format_uuid_string(val)
//	except (TypeError, ValueError, AttributeError):
//	    return False
//
// where _format_uuid_string removes "urn:" and "uuid:", strips "{" and "}"
// from the ends, removes dashes and lower-cases. The canonical form is 32
// lower-case ASCII hex digits, so this holds exactly when what is left is
// that. Non-strings are not UUIDs (UUID() raises TypeError/AttributeError).
func isUUIDLike(instance any) bool {
	s, ok := instance.(string)
	if !ok {
		return false
	}
	return UUIDLikeHex(s) != ""
}

// UUIDLikeHex returns the 32 lower-case hex digits of a string oslo's
// is_uuid_like accepts, or "" if it is not UUID-like.
func UUIDLikeHex(s string) string {
	h := strings.ReplaceAll(s, "urn:", "")
	h = strings.ReplaceAll(h, "uuid:", "")
	h = strings.Trim(h, "{}")
	h = strings.ReplaceAll(h, "-", "")
	h = strings.ToLower(h)
	if len(h) != 32 {
		return ""
	}
	for _, r := range h {
		if !isHexDigit(r) {
			return ""
		}
	}
	return h
}
