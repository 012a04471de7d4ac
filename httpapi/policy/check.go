package policy

import "strings"

// check is one node of a parsed check string.
type check interface {
	eval(e *evaluation) bool
	String() string
}

// evaluation is the state of one Authorize call.
type evaluation struct {
	rules  map[string]check
	target map[string]string
	creds  map[string][]string
	roles  []string // lower-cased, for role checks
	depth  int
}

// maxDepth bounds rule:... indirection. New refuses cycles, so this is only
// a guard.
const maxDepth = 64

// lookupRule finds a rule referenced by rule:name. A name with no rule falls
// back to the rule named "default" when a policy file defines one (oslo.policy's
// [oslo_policy] policy_default_rule), otherwise the check is false.
func lookupRule(rules map[string]check, name string) (check, bool) {
	if c, ok := rules[name]; ok {
		return c, true
	}
	c, ok := rules[defaultRuleName]
	return c, ok
}

const defaultRuleName = "default"

type trueCheck struct{}

func (trueCheck) eval(*evaluation) bool { return true }
func (trueCheck) String() string        { return "@" }

type falseCheck struct{}

func (falseCheck) eval(*evaluation) bool { return false }
func (falseCheck) String() string        { return "!" }

type notCheck struct{ c check }

func (n notCheck) eval(e *evaluation) bool { return !n.c.eval(e) }
func (n notCheck) String() string          { return "not " + n.c.String() }

type andCheck []check

func (a andCheck) eval(e *evaluation) bool {
	for _, c := range a {
		if !c.eval(e) {
			return false
		}
	}
	return true
}

func (a andCheck) String() string { return join(a, " and ") }

type orCheck []check

func (o orCheck) eval(e *evaluation) bool {
	for _, c := range o {
		if c.eval(e) {
			return true
		}
	}
	return false
}

func (o orCheck) String() string { return join(o, " or ") }

func join(cs []check, sep string) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return "(" + strings.Join(parts, sep) + ")"
}

// ruleCheck is "rule:name": the named rule's check.
type ruleCheck struct{ name string }

func (r ruleCheck) eval(e *evaluation) bool {
	c, ok := lookupRule(e.rules, r.name)
	if !ok || e.depth >= maxDepth {
		return false
	}
	e.depth++
	defer func() { e.depth-- }()
	return c.eval(e)
}

func (r ruleCheck) String() string { return "rule:" + r.name }

// roleCheck is "role:name": the credentials hold that role, compared
// case-insensitively. The match may refer to the target ("role:%(x)s").
type roleCheck struct {
	raw   string
	match format
}

func (r roleCheck) eval(e *evaluation) bool {
	m, ok := r.match.apply(e.target)
	if !ok {
		return false
	}
	m = strings.ToLower(m)
	for _, role := range e.roles {
		if role == m {
			return true
		}
	}
	return false
}

func (r roleCheck) String() string { return "role:" + r.raw }

// genericCheck is "kind:match" for any other kind: the match (after target
// substitution) must equal str() of the credential field named by kind, or of
// the literal kind ("'member'", True, 42). A list-valued field matches when
// any element does.
type genericCheck struct {
	kind, raw string
	match     format
	literal   string
	isLiteral bool
	path      []string
}

func (g genericCheck) eval(e *evaluation) bool {
	m, ok := g.match.apply(e.target)
	if !ok {
		return false
	}
	if g.isLiteral {
		return m == g.literal
	}
	// Credential values are flat: a dotted path into them has nothing to
	// find (upstream: KeyError or TypeError).
	if len(g.path) != 1 {
		return false
	}
	for _, v := range e.creds[g.path[0]] {
		if v == m {
			return true
		}
	}
	return false
}

func (g genericCheck) String() string {
	s := g.kind + ":" + g.raw
	// A check that starts and ends with the same quote (kind `"`, match
	// `"`) would read back as a quoted string standing alone, which is not
	// a check; in parentheses it is read as the check it is, as oslo.policy
	// reads `(":")` (found by FuzzParseCheck).
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return "(" + s + ")"
	}
	return s
}

// refs calls f with the name of every rule c refers to.
func refs(c check, f func(string)) {
	switch c := c.(type) {
	case ruleCheck:
		f(c.name)
	case notCheck:
		refs(c.c, f)
	case andCheck:
		for _, x := range c {
			refs(x, f)
		}
	case orCheck:
		for _, x := range c {
			refs(x, f)
		}
	}
}
