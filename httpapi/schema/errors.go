package schema

import (
	"slices"
	"strings"
)

// ValidationError is one failure of an instance against a schema, carrying
// what jsonschema's ValidationError carries and rendering the same text.
//
// Path and SchemaPath are relative, as in jsonschema (relative_path and
// relative_schema_path): for the error Validate returns they start at the
// document root, except when best_match picked an error from inside an
// anyOf/oneOf, whose paths are relative to that anyOf/oneOf. That is also
// what Python's str() of such an error shows.
type ValidationError struct {
	// Message is the first line of Error(), e.g.
	// "'name' is a required property".
	Message string
	// Keyword is the failing keyword ("required", "maxLength", ...), or ""
	// for a false boolean schema (Python's validator is None then).
	Keyword string
	// Path locates the failing instance: string keys and int indexes.
	Path []any
	// SchemaPath locates the failing keyword in the schema, ending with it.
	SchemaPath []any

	set      bool // keyword/instance/schema filled in (jsonschema's _set)
	instance any  // internal value
	node     *node
	context  []*ValidationError // anyOf/oneOf: errors of the alternatives
}

// Error returns exactly what Python's str(ValidationError) returns in
// jsonschema 4.10.3:
//
//	<message>
//
//	Failed validating '<keyword>' in schema['properties']['name']:
//	    <pprint of the schema containing the keyword>
//
//	On instance['name']:
//	    <pprint of the instance>
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	b.WriteString("\n\nFailed validating ")
	if e.Keyword == "" {
		b.WriteString("None")
	} else {
		b.WriteString(pyStrRepr(e.Keyword))
	}
	b.WriteString(" in ")
	sp := e.SchemaPath
	if len(sp) > 0 {
		sp = sp[:len(sp)-1]
	}
	b.WriteString(formatAsIndex("schema", sp))
	b.WriteString(":\n    ")
	b.WriteString(indentContinuation(pformat(e.node.raw)))
	b.WriteString("\n\nOn ")
	b.WriteString(formatAsIndex("instance", e.Path))
	b.WriteString(":\n    ")
	b.WriteString(indentContinuation(pformat(e.instance)))
	return b.String()
}

// indentContinuation indents every line but the first by four spaces: the
// net effect of textwrap.indent(..., 16 spaces).lstrip() inside the
// dedent()ed template of ValidationError.__str__.
func indentContinuation(s string) string {
	return strings.ReplaceAll(s, "\n", "\n    ")
}

// relevance is jsonschema.exceptions.relevance's key:
// (-len(path), validator not in WEAK_MATCHES, validator in STRONG_MATCHES,
// not error._matches_type()), STRONG_MATCHES being empty.
type relevance struct {
	negPathLen   int
	notWeak      bool
	notMatchType bool
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

func (r relevance) cmp(o relevance) int {
	if r.negPathLen != o.negPathLen {
		if r.negPathLen < o.negPathLen {
			return -1
		}
		return 1
	}
	if c := cmpBool(r.notWeak, o.notWeak); c != 0 {
		return c
	}
	return cmpBool(r.notMatchType, o.notMatchType)
}

func (e *ValidationError) relevance() relevance {
	return relevance{
		negPathLen:   -len(e.Path),
		notWeak:      e.Keyword != "anyOf" && e.Keyword != "oneOf",
		notMatchType: !e.matchesType(),
	}
}

// matchesType is ValidationError._matches_type: whether the instance is of
// the "type" of the schema holding the failing keyword (false when that
// schema has no "type", or is a boolean schema).
func (e *ValidationError) matchesType() bool {
	if !e.node.hasType {
		return false
	}
	return slices.ContainsFunc(e.node.typeList, func(t string) bool { return isType(e.instance, t) })
}

// bestMatch is jsonschema.exceptions.best_match: the most relevant error
// (the first one among equals, as Python's max() picks), then, while it has
// a context (anyOf/oneOf), the least relevant error of that context, unless
// the two least relevant ones tie.
func bestMatch(errs []*ValidationError) *ValidationError {
	if len(errs) == 0 {
		return nil
	}
	best := errs[0]
	for _, e := range errs[1:] {
		if e.relevance().cmp(best.relevance()) > 0 {
			best = e
		}
	}
	for len(best.context) > 0 {
		// heapq.nsmallest(2, ...) is sorted(...)[:2], and sorted is stable.
		smallest := slices.Clone(best.context)
		slices.SortStableFunc(smallest, func(a, b *ValidationError) int {
			return a.relevance().cmp(b.relevance())
		})
		if len(smallest) >= 2 && smallest[0].relevance() == smallest[1].relevance() {
			return best
		}
		best = smallest[0]
	}
	return best
}
