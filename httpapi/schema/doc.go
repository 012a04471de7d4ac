// Package schema validates request bodies and query parameters against JSON
// schemas, reporting failures in exactly the words of Python's jsonschema
// (4.x, as upstream OpenStack Placement uses it).
//
// Upstream Placement calls
//
//	jsonschema.validate(data, schema, format_checker=jsonschema.FormatChecker())
//
// and answers a failure with 400 and the detail "JSON does not validate: "
// (or "Invalid query string parameters: ") followed by str() of the
// ValidationError. That text names the failing keyword and the schema and
// instance paths, renders both with Python's repr and pprint, and is chosen
// among all errors by jsonschema's best_match heuristic, which depends on
// the order keywords and properties appear in the schema and in the
// document. API clients and the conformance suite see that text, so it is
// part of the API.
//
// The package is hand-written because no Go JSON-schema library produces
// Python jsonschema's messages, error selection or Python-style rendering.
// It implements what Placement's schemas need (draft 2020-12 semantics,
// which is what jsonschema applies to a schema without "$schema"):
// type, properties, required, additionalProperties, patternProperties,
// minProperties, maxProperties, items, minItems, maxItems, uniqueItems,
// enum, const, minimum, maximum, exclusiveMinimum, exclusiveMaximum,
// multipleOf, minLength, maxLength, pattern, format "uuid", anyOf, oneOf,
// allOf, not, and boolean schemas. A schema using anything else jsonschema
// would enforce ($ref, if, prefixItems, other formats, ...) fails to
// compile instead of being enforced differently.
//
// Request bodies and query strings differ upstream in one respect: bodies
// check format "uuid" with oslo's is_uuid_like (util.extract_json installs
// it in its FormatChecker), query strings with jsonschema's own check. Use
// CompileBody/MustCompileBody for body schemas and Compile/MustCompile for
// query string schemas.
//
// The package owns: compiling schemas written as JSON text (key order
// preserved), decoding request bodies the way Python's json.loads sees them
// (DecodeJSON, ValidateJSON), validation, best_match, and the rendering of
// ValidationError (Error, Message). It does not own the schemas themselves
// nor the HTTP error responses, which belong to the handlers.
//
// Known differences from Python are documented where they arise: the order
// in which errors of an additionalProperties subschema are found (Python
// iterates a set there, so its own order is arbitrary), key order of
// instances passed as Go maps (see Schema.Validate), the Unicode version
// deciding which characters repr() escapes (Go's tables, Unicode 15.0, as
// Python 3.12; Python 3.11 uses 14.0), lone UTF-16 surrogates in JSON
// strings (Go decodes them as U+FFFD), and documents nested more than
// 10,000 deep (Python's recursion limit stops it at about 1,000, with a
// RecursionError upstream answers with 500).
//
// It imports nothing of placementd and must not: it is a validator with
// Python's wording, usable on any JSON.
package schema
