package httpapi

import (
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi/schema"
)

// Query-string normalisers, upstream's util.normalize_*_qs_param(s). Each
// returns the parsed value, or a non-empty detail for a 400 answer. They
// are shared by GET /resource_providers and GET /allocation_candidates
// (which passes a request group suffix). Their cost is linear in the
// query: its pairs are split once per request (queryOf), and a parameter
// repeated ten thousand times is read once.

// queryValues is webob's req.GET.getall(key): every value in order. The
// caller must not change the slice.
func queryValues(r *http.Request, key string) []string { return queryOf(r).values[key] }

// queryHas reports whether key appears in the query string.
func queryHas(r *http.Request, key string) bool { return len(queryValues(r, key)) > 0 }

// queryLast is webob's req.GET[key]: the last value.
func queryLast(r *http.Request, key string) string {
	vs := queryValues(r, key)
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

// uniqueStrings collects strings once each (a Python set), kept in
// first-seen order so that which bad value is reported is stable.
type uniqueStrings struct {
	list []string
	seen map[string]bool
}

func (u *uniqueStrings) add(items ...string) {
	for _, s := range items {
		if u.seen == nil {
			u.seen = map[string]bool{}
		}
		if !u.seen[s] {
			u.seen[s] = true
			u.list = append(u.list, s)
		}
	}
}

func (u *uniqueStrings) has(s string) bool { return u.seen[s] }

// unique returns items without repeats, in first-seen order.
func unique(items []string) []string {
	var u uniqueStrings
	u.add(items...)
	return u.list
}

// normalizeMemberOf is normalize_member_of_qs_params: required groups
// (each an OR of aggregates) and forbidden aggregates. Several member_of
// parameters need 1.24, forbidden ones ("!") 1.32.
func normalizeMemberOf(r *http.Request, suffix string) (required [][]string, forbidden []string, detail string) {
	v := versionOf(r)
	values := queryValues(r, "member_of"+suffix)
	if !v.AtLeast(24) && len(values) > 1 {
		return nil, nil, fmt.Sprintf("Multiple member_of%s parameters are not supported", suffix)
	}
	var forb uniqueStrings
	for _, value := range values {
		req, f, d := normalizeMemberOfValue(value)
		if d != "" {
			return nil, nil, d
		}
		if len(req) > 0 {
			required = append(required, req)
		}
		if len(f) > 0 {
			if !v.AtLeast(32) {
				return nil, nil, fmt.Sprintf("Forbidden member_of%s parameters are not supported in the specified microversion", suffix)
			}
			forb.add(f...)
		}
	}
	return required, forb.list, ""
}

// normalizeMemberOfValue is normalize_member_of_qs_param: a uuid, "!" and
// a uuid, or "in:"/"!in:" and comma-separated uuids.
func normalizeMemberOfValue(value string) (required, forbidden []string, detail string) {
	if strings.Contains(value, ",") && !strings.HasPrefix(value, "in:") && !strings.HasPrefix(value, "!in:") {
		return nil, nil, "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' keyword using the valid microversion. Got: " + value
	}
	switch {
	case strings.HasPrefix(value, "!in:"):
		forbidden = unique(strings.Split(value[4:], ","))
	case strings.HasPrefix(value, "!"):
		forbidden = []string{value[1:]}
	case strings.HasPrefix(value, "in:"):
		required = unique(strings.Split(value[3:], ","))
	default:
		required = []string{value}
	}
	for _, agg := range slices.Concat(required, forbidden) {
		if schema.UUIDLikeHex(agg) == "" {
			return nil, nil, "Invalid query string parameters: Expected 'member_of' parameter to contain valid UUID(s). Got: " + agg
		}
	}
	return required, forbidden, ""
}

// normalizeRequiredTraits is normalize_traits_qs_params for the
// required<suffix> parameter: groups of traits (each an OR) and forbidden
// traits. Forbidden traits need 1.22; "in:" and repeating the parameter
// need 1.39 (before it only the last value counts).
func normalizeRequiredTraits(r *http.Request, suffix string) (required [][]string, forbidden []string, detail string) {
	v := versionOf(r)
	allowForbidden, allowAny := v.AtLeast(22), v.AtLeast(39)
	values := queryValues(r, "required"+suffix)
	if !allowAny && len(values) > 1 {
		values = values[len(values)-1:]
	}
	var forb uniqueStrings
	for _, value := range values {
		req, f, d := normalizeTraitsValue(value, allowForbidden, allowAny)
		if d != "" {
			return nil, nil, d
		}
		required = append(required, req...)
		forb.add(f...)
	}
	return required, forb.list, ""
}

// normalizeTraitsValue is normalize_traits_qs_param.
func normalizeTraitsValue(val string, allowForbidden, allowAny bool) (required [][]string, forbidden []string, detail string) {
	if strings.HasPrefix(val, "in:") {
		if !allowAny {
			return nil, nil, "Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39. Got: " + val
		}
		var stripped []string
		for _, t := range strings.Split(val[3:], ",") {
			stripped = append(stripped, pyStripText(t))
		}
		anyOf := unique(stripped)
		for _, t := range anyOf {
			if t == "" {
				return nil, nil, "Invalid query string parameters: Expected 'required' parameter value of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: " + val
			}
		}
		for _, t := range anyOf {
			if strings.HasPrefix(t, "!") {
				return nil, nil, "Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support forbidden traits. Got: " + val
			}
		}
		return [][]string{anyOf}, nil, ""
	}
	var all []string
	for _, t := range strings.Split(val, ",") {
		all = append(all, pyStripText(t))
	}
	// As upstream, any number of leading "!" is stripped.
	empty := false
	var forb uniqueStrings
	for _, t := range all {
		if strings.HasPrefix(t, "!") {
			f := strings.TrimLeft(t, "!")
			empty = empty || f == ""
			forb.add(f)
		}
		empty = empty || t == ""
	}
	forbidden = forb.list
	if empty {
		form := "HW_CPU_X86_VMX,!CUSTOM_MAGIC"
		if !allowForbidden {
			form = "HW_CPU_X86_VMX,CUSTOM_MAGIC"
		}
		return nil, nil, "Invalid query string parameters: Expected 'required' parameter value of the form: " + form + ". Got an empty trait in: " + val
	}
	for _, t := range all {
		if !strings.HasPrefix(t, "!") {
			required = append(required, []string{t})
		}
	}
	if len(forbidden) > 0 && !allowForbidden {
		return nil, nil, "Invalid query string parameters: Expected 'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: " + val
	}
	return required, forbidden, ""
}

// pyStripText is Python's str.strip() without arguments.
func pyStripText(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		switch r {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, 0x85:
			return true
		}
		return r > 0x7f && (r == 0xa0 || r == 0x1680 || (r >= 0x2000 && r <= 0x200a) ||
			r == 0x2028 || r == 0x2029 || r == 0x202f || r == 0x205f || r == 0x3000)
	})
}

// normalizeResources is normalize_resources_qs_param:
// "VCPU:2,MEMORY_MB:1024" as amounts by class, in first-seen order (a
// class given twice keeps its first position and its last amount).
func normalizeResources(qs string) ([]state.ResourceAmount, string) {
	const form = "Badly formed resources parameter. Expected resources query string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: "
	if pyStripText(qs) == "" {
		return nil, form + "empty string."
	}
	var out []state.ResourceAmount
	for _, rt := range strings.Split(qs, ",") {
		parts := strings.Split(rt, ":")
		if len(parts) != 2 {
			return nil, form + rt + "."
		}
		name, amountText := parts[0], parts[1]
		amount, ok := pyIntBig(amountText)
		if !ok {
			return nil, fmt.Sprintf("Requested resource %s expected positive integer amount. Got: %s.", name, amountText)
		}
		if amount.Sign() < 1 {
			return nil, fmt.Sprintf("Requested resource %s requires amount >= 1. Got: %s.", name, amount.String())
		}
		n := amount.Int64()
		if !amount.IsInt64() {
			n = 1<<63 - 1 // more than any inventory can hold
		}
		replaced := false
		for i := range out {
			if out[i].Class == name {
				out[i].Amount, replaced = n, true
			}
		}
		if !replaced {
			out = append(out, state.ResourceAmount{Class: name, Amount: n})
		}
	}
	return out, ""
}

// pyIntBig parses a string as Python's int() does for ASCII input: optional
// surrounding whitespace, an optional sign, decimal digits with single
// underscores between them, and at most schema.MaxIntDigits digits.
func pyIntBig(s string) (*big.Int, bool) {
	t := pyStripText(s)
	digits := strings.TrimLeft(t, "+-")
	if len(t)-len(digits) > 1 || digits == "" {
		return nil, false
	}
	prevDigit := false
	var clean strings.Builder
	for _, r := range digits {
		switch {
		case r >= '0' && r <= '9':
			clean.WriteRune(r)
			prevDigit = true
		case r == '_' && prevDigit:
			prevDigit = false
		default:
			return nil, false
		}
	}
	if !prevDigit || schema.IntDigitsError(clean.Len()) != nil {
		// Past Python's digit limit int() raises ValueError before
		// converting; so does this, the conversion being quadratic.
		return nil, false
	}
	n, ok := new(big.Int).SetString(clean.String(), 10)
	if ok && strings.HasPrefix(t, "-") {
		n.Neg(n)
	}
	return n, ok
}
