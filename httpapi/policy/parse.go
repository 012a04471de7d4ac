package policy

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Check is a parsed check string: a tree of checks joined by "and", "or" and
// "not". Its String form is oslo.policy's (and/or groups parenthesised).
type Check struct {
	root check
}

func (c *Check) String() string { return c.root.String() }

// ParseError reports a check string that is not valid oslo.policy syntax.
type ParseError struct {
	Rule   string // the check string
	Column int    // 1-based column (in characters) of the offending token; 0 if none
	Msg    string
}

func (e *ParseError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("invalid check string %q: column %d: %s", e.Rule, e.Column, e.Msg)
	}
	return fmt.Sprintf("invalid check string %q: %s", e.Rule, e.Msg)
}

// ParseCheck parses a check string in oslo.policy's policy language:
//
//	"@"                        always allowed
//	"!"                        always refused
//	"role:admin"               the credentials have role admin (case-insensitive)
//	"rule:admin_api"           the named rule allows it
//	"project_id:%(project_id)s" credential field equals the target's value
//	"'member':%(role.name)s"   a literal (quoted string, True, False, None,
//	                           integer) equals the target's value
//	"not X", "X and Y", "X or Y", "(X)"
//
// "not" binds tighter than "and", which binds tighter than "or"; the
// keywords are case-insensitive. The empty string allows everyone, as in
// oslo.policy.
//
// Where oslo.policy logs a check string it cannot parse and makes that rule
// refuse everyone (fail closed), ParseCheck returns an error, so that a
// server refuses to start with a broken policy file instead of answering 403
// to requests an operator meant to allow. The same goes for a bare word with
// no ':' (oslo.policy: always false), a quoted token standing alone, remote
// "http:"/"https:" checks (not supported here) and %-formats other than
// %(name)s and %% in a match (oslo.policy: an exception at enforcement).
func ParseCheck(s string) (*Check, error) {
	c, err := parseRule(s)
	if err != nil {
		return nil, err
	}
	return &Check{root: c}, nil
}

type tokKind int

const (
	tLParen tokKind = iota
	tRParen
	tAnd
	tOr
	tNot
	tCheck
)

type token struct {
	kind tokKind
	text string
	col  int // 1-based character column
	chk  check
}

func (t token) describe() string {
	switch t.kind {
	case tLParen:
		return "'('"
	case tRParen:
		return "')'"
	case tCheck:
		return fmt.Sprintf("check %q", t.text)
	default:
		return fmt.Sprintf("%q", t.text)
	}
}

// tokenize splits a check string the way oslo.policy's _parse_tokenize does:
// on whitespace, then peeling '(' off the front and ')' off the end of each
// word ("%(project_id)s" keeps its parentheses because they are inside).
func tokenize(rule string) ([]token, error) {
	var toks []token
	col := 0 // character column of the current rune, 1-based once incremented
	start, startCol := -1, 0
	flush := func(end int) error {
		if start < 0 {
			return nil
		}
		word, wcol := rule[start:end], startCol
		start = -1
		clean := strings.TrimLeft(word, "(")
		for i := 0; i < len(word)-len(clean); i++ {
			toks = append(toks, token{kind: tLParen, text: "(", col: wcol + i})
		}
		if clean == "" {
			return nil
		}
		ccol := wcol + len(word) - len(clean)
		body := strings.TrimRight(clean, ")")
		trail := len(clean) - len(body)
		if body != "" {
			switch strings.ToLower(body) {
			case "and":
				toks = append(toks, token{kind: tAnd, text: body, col: ccol})
			case "or":
				toks = append(toks, token{kind: tOr, text: body, col: ccol})
			case "not":
				toks = append(toks, token{kind: tNot, text: body, col: ccol})
			default:
				if len(clean) >= 2 && (clean[0] == '"' || clean[0] == '\'') && clean[len(clean)-1] == clean[0] {
					return &ParseError{Rule: rule, Column: ccol,
						Msg: fmt.Sprintf("quoted string %s is not a check (a literal must be followed by :%%(field)s)", clean)}
				}
				c, msg := parseLeaf(body)
				if msg != "" {
					return &ParseError{Rule: rule, Column: ccol, Msg: msg}
				}
				toks = append(toks, token{kind: tCheck, text: body, col: ccol, chk: c})
			}
		}
		rcol := ccol + utf8.RuneCountInString(body)
		for i := 0; i < trail; i++ {
			toks = append(toks, token{kind: tRParen, text: ")", col: rcol + i})
		}
		return nil
	}
	for i, r := range rule {
		col++
		if unicode.IsSpace(r) {
			if err := flush(i); err != nil {
				return nil, err
			}
			continue
		}
		if start < 0 {
			start, startCol = i, col
		}
	}
	if err := flush(len(rule)); err != nil {
		return nil, err
	}
	return toks, nil
}

func parseRule(rule string) (check, error) {
	if rule == "" {
		return trueCheck{}, nil
	}
	toks, err := tokenize(rule)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, &ParseError{Rule: rule,
			Msg: `blank check string (use "" or "@" to allow everyone, "!" to allow no one)`}
	}
	p := &parser{rule: rule, toks: toks}
	c, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.toks) {
		t := p.toks[p.pos]
		if t.kind == tRParen {
			return nil, p.errAt(t, "unbalanced ')'")
		}
		return nil, p.errAt(t, fmt.Sprintf("expected 'and' or 'or' before %s", t.describe()))
	}
	return c, nil
}

type parser struct {
	rule string
	toks []token
	pos  int
}

func (p *parser) errAt(t token, msg string) error {
	return &ParseError{Rule: p.rule, Column: t.col, Msg: msg}
}

func (p *parser) peek() (token, bool) {
	if p.pos < len(p.toks) {
		return p.toks[p.pos], true
	}
	return token{}, false
}

// parseOr: and-expr { "or" and-expr }
func (p *parser) parseOr() (check, error) {
	first, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	var terms []check
	for {
		t, ok := p.peek()
		if !ok || t.kind != tOr {
			break
		}
		p.pos++
		next, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		if terms == nil {
			terms = []check{first}
		}
		terms = append(terms, next)
	}
	if terms == nil {
		return first, nil
	}
	return orCheck(terms), nil
}

// parseAnd: not-expr { "and" not-expr }
func (p *parser) parseAnd() (check, error) {
	first, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	var terms []check
	for {
		t, ok := p.peek()
		if !ok || t.kind != tAnd {
			break
		}
		p.pos++
		next, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		if terms == nil {
			terms = []check{first}
		}
		terms = append(terms, next)
	}
	if terms == nil {
		return first, nil
	}
	return andCheck(terms), nil
}

// parseNot: "not" not-expr | "(" or-expr ")" | check
func (p *parser) parseNot() (check, error) {
	t, ok := p.peek()
	if !ok {
		prev := p.toks[len(p.toks)-1]
		return nil, &ParseError{Rule: p.rule, Column: prev.col,
			Msg: fmt.Sprintf("check string ends after %s; expected a check, 'not' or '('", prev.describe())}
	}
	switch t.kind {
	case tNot:
		p.pos++
		c, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return notCheck{c}, nil
	case tLParen:
		p.pos++
		c, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		end, ok := p.peek()
		if !ok {
			return nil, p.errAt(t, "'(' is never closed")
		}
		if end.kind != tRParen {
			return nil, p.errAt(end, fmt.Sprintf("expected 'and', 'or' or ')' before %s", end.describe()))
		}
		p.pos++
		return c, nil
	case tCheck:
		p.pos++
		return t.chk, nil
	default:
		return nil, p.errAt(t, fmt.Sprintf("expected a check, 'not' or '(' but found %s", t.describe()))
	}
}

// parseLeaf parses one check token (oslo.policy's _parse_check). It returns
// a non-empty message when the token is not a valid check.
func parseLeaf(s string) (check, string) {
	switch s {
	case "@":
		return trueCheck{}, ""
	case "!":
		return falseCheck{}, ""
	}
	kind, match, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Sprintf("%q is not a check: expected kind:match (such as role:admin or rule:admin_api), \"@\" or \"!\"", s)
	}
	switch kind {
	case "rule":
		return ruleCheck{name: match}, ""
	case "http", "https":
		return nil, fmt.Sprintf("%q: remote %s checks are not supported", s, kind)
	}
	f, err := parseFormat(match)
	if err != "" {
		return nil, fmt.Sprintf("%q: %s", s, err)
	}
	if kind == "role" {
		return roleCheck{raw: match, match: f}, ""
	}
	g := genericCheck{kind: kind, raw: match, match: f}
	if lit, ok := pyLiteral(kind); ok {
		g.literal, g.isLiteral = lit, true
	} else {
		g.path = strings.Split(kind, ".")
	}
	return g, ""
}

// format is a check's match with its %(name)s references to the target.
type format []fpart

type fpart struct {
	text  string // literal text, or the key when isKey
	isKey bool
}

// parseFormat splits a match on Python %-format references. Only %(name)s
// and %% are accepted: anything else would make Python raise when the rule
// is enforced.
func parseFormat(s string) (format, string) {
	if !strings.Contains(s, "%") {
		return format{{text: s}}, ""
	}
	var f format
	var lit strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '%' {
			lit.WriteByte(c)
			i++
			continue
		}
		if i+1 < len(s) && s[i+1] == '%' {
			lit.WriteByte('%')
			i += 2
			continue
		}
		if i+1 >= len(s) || s[i+1] != '(' {
			return nil, fmt.Sprintf("bad %%-format at %q: only %%(name)s and %%%% are allowed", s[i:])
		}
		// Python matches nested parentheses in the key.
		depth, j := 1, i+2
		for ; j < len(s) && depth > 0; j++ {
			switch s[j] {
			case '(':
				depth++
			case ')':
				depth--
			}
		}
		if depth > 0 {
			return nil, fmt.Sprintf("bad %%-format at %q: unclosed %%(", s[i:])
		}
		key := s[i+2 : j-1]
		if j >= len(s) || s[j] != 's' {
			return nil, fmt.Sprintf("bad %%-format at %q: only %%(name)s and %%%% are allowed", s[i:])
		}
		if lit.Len() > 0 {
			f = append(f, fpart{text: lit.String()})
			lit.Reset()
		}
		f = append(f, fpart{text: key, isKey: true})
		i = j + 1
	}
	if lit.Len() > 0 || len(f) == 0 {
		f = append(f, fpart{text: lit.String()})
	}
	return f, ""
}

// apply substitutes target values (Python's match % target). A key the
// target lacks makes the check false, as the KeyError does upstream.
func (f format) apply(target map[string]string) (string, bool) {
	if len(f) == 1 && !f[0].isKey {
		return f[0].text, true
	}
	var b strings.Builder
	for _, p := range f {
		if !p.isKey {
			b.WriteString(p.text)
			continue
		}
		v, ok := target[p.text]
		if !ok {
			return "", false
		}
		b.WriteString(pyStr(v))
	}
	return b.String(), true
}

// pyLiteral reports whether a generic check's kind is a Python literal
// (ast.literal_eval succeeds) and returns str() of its value. Supported:
// quoted strings without escapes, True, False, None and decimal integers.
func pyLiteral(kind string) (string, bool) {
	switch kind {
	case "True", "False", "None":
		return kind, true
	}
	if n := len(kind); n >= 2 && (kind[0] == '\'' || kind[0] == '"') && kind[n-1] == kind[0] {
		inner := kind[1 : n-1]
		if !strings.ContainsAny(inner, "\\'\"") {
			return inner, true
		}
		return "", false
	}
	digits, neg := kind, false
	if digits != "" && (digits[0] == '-' || digits[0] == '+') {
		neg = digits[0] == '-'
		digits = digits[1:]
	}
	if digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return "", false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", false
		}
	}
	if neg && digits != "0" {
		return "-" + digits, true
	}
	return digits, true
}

// parseListRule translates the old JSON list-of-lists syntax (outer list
// "or", inner lists "and"; each element one check, with no operators), as
// oslo.policy's _parse_list_rule does.
func parseListRule(rule [][]string) (check, error) {
	if len(rule) == 0 {
		return trueCheck{}, nil
	}
	var ors []check
	for _, inner := range rule {
		if len(inner) == 0 {
			continue
		}
		var ands []check
		for _, s := range inner {
			c, msg := parseLeaf(s)
			if msg != "" {
				return nil, &ParseError{Rule: s, Msg: msg}
			}
			ands = append(ands, c)
		}
		if len(ands) == 1 {
			ors = append(ors, ands[0])
		} else {
			ors = append(ors, andCheck(ands))
		}
	}
	switch len(ors) {
	case 0:
		return falseCheck{}, nil
	case 1:
		return ors[0], nil
	}
	return orCheck(ors), nil
}
