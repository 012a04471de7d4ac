package policy

import (
	"errors"
	"strings"
	"testing"
)

func mustParse(t *testing.T, s string) check {
	t.Helper()
	c, err := parseRule(s)
	if err != nil {
		t.Fatalf("parseRule(%q): %v", s, err)
	}
	return c
}

// TestParseStructure checks precedence (not > and > or), parentheses and
// tokenization through the canonical String form, which is oslo.policy's
// str() of the check tree.
func TestParseStructure(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "@"},
		{"@", "@"},
		{"!", "!"},
		{"role:admin", "role:admin"},
		{"rule:admin_api", "rule:admin_api"},
		{"a:1 or b:2", "(a:1 or b:2)"},
		{"a:1 and b:2", "(a:1 and b:2)"},
		{"a:1 or b:2 or c:3", "(a:1 or b:2 or c:3)"},
		{"a:1 and b:2 and c:3", "(a:1 and b:2 and c:3)"},
		// and binds tighter than or, on either side
		{"a:1 or b:2 and c:3", "(a:1 or (b:2 and c:3))"},
		{"a:1 and b:2 or c:3", "((a:1 and b:2) or c:3)"},
		{"a:1 and b:2 or c:3 and d:4", "((a:1 and b:2) or (c:3 and d:4))"},
		{"a:1 or b:2 and c:3 and d:4 or e:5", "(a:1 or (b:2 and c:3 and d:4) or e:5)"},
		// not binds tighter than and/or
		{"not a:1 and b:2", "(not a:1 and b:2)"},
		{"not a:1 or b:2", "(not a:1 or b:2)"},
		{"a:1 and not b:2", "(a:1 and not b:2)"},
		{"a:1 or not b:2 and c:3", "(a:1 or (not b:2 and c:3))"},
		{"not not a:1", "not not a:1"},
		// parentheses
		{"(a:1 or b:2) and c:3", "((a:1 or b:2) and c:3)"},
		{"a:1 and (b:2 or c:3)", "(a:1 and (b:2 or c:3))"},
		{"not (a:1 or b:2)", "not (a:1 or b:2)"},
		{"((a:1))", "a:1"},
		{"( a:1 or ( b:2 ) )", "(a:1 or b:2)"},
		{"(not a:1)", "not a:1"},
		// keywords are case-insensitive
		{"a:1 AND b:2 Or NOT c:3", "((a:1 and b:2) or not c:3)"},
		// parentheses inside a word are part of the check
		{"project_id:%(project_id)s", "project_id:%(project_id)s"},
		{"(role:reader and project_id:%(project_id)s)", "(role:reader and project_id:%(project_id)s)"},
		// whitespace of any kind separates tokens
		{"\trole:a\n or\r\nrole:b ", "(role:a or role:b)"},
		// the kind is split at the first ':' only
		{"role:compute:admin", "role:compute:admin"},
		{"'member':%(role.name)s", "'member':%(role.name)s"},
		{"is_admin:True", "is_admin:True"},
		// upstream defaults
		{"role:admin or rule:project_reader_api or role:service",
			"(role:admin or rule:project_reader_api or role:service)"},
	}
	for _, tc := range cases {
		c := mustParse(t, tc.in)
		if got := c.String(); got != tc.want {
			t.Errorf("parse(%q) = %s, want %s", tc.in, got, tc.want)
		}
		// The canonical form parses to itself.
		if again := mustParse(t, c.String()).String(); again != c.String() {
			t.Errorf("reparse(%q) = %s, want %s", c.String(), again, c.String())
		}
	}
}

// TestParseEval evaluates "@"/"!" combinations, so precedence is checked
// by result too.
func TestParseEval(t *testing.T) {
	cases := []struct {
		in   string
		want bool
	}{
		{"", true},
		{"@", true},
		{"!", false},
		{"not @", false},
		{"not !", true},
		{"not not @", true},
		{"@ or ! and !", true},  // @ or (! and !)
		{"! and ! or @", true},  // (! and !) or @
		{"! and @ or @", true},  // (! and @) or @
		{"@ and ! or !", false}, // (@ and !) or !
		{"(@ or !) and !", false},
		{"@ or (! and !)", true},
		{"not @ or @", true},    // (not @) or @
		{"not (@ or @)", false}, //
		{"not @ and @", false},  // (not @) and @
		{"! or not ! and @", true},
	}
	for _, tc := range cases {
		c := mustParse(t, tc.in)
		if got := c.eval(&evaluation{}); got != tc.want {
			t.Errorf("eval(%q) [%s] = %v, want %v", tc.in, c, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		in, msg string
		col     int
	}{
		{"   ", "blank check string", 0},
		{"role:admin and", "ends after \"and\"", 12},
		{"role:admin or", "ends after \"or\"", 12},
		{"not", "ends after \"not\"", 1},
		{"and role:admin", "found \"and\"", 1},
		{"role:a or or role:b", "found \"or\"", 11},
		{"(role:admin", "'(' is never closed", 1},
		{"(role:a or (role:b)", "'(' is never closed", 1},
		{"role:admin)", "unbalanced ')'", 11},
		{"()", "found ')'", 2},
		{"role:a role:b", "expected 'and' or 'or' before check \"role:b\"", 8},
		{"(role:a role:b)", "expected 'and', 'or' or ')' before check \"role:b\"", 9},
		{"admin", "\"admin\" is not a check", 1},
		{"role:a or admin", "\"admin\" is not a check", 11},
		{"'admin'", "quoted string 'admin' is not a check", 1},
		{"https://example.com/check", "remote https checks are not supported", 1},
		{"http:%(x)s", "remote http checks are not supported", 1},
		{"role:50%", "bad %-format", 1},
		{"project_id:%(project_id)d", "bad %-format", 1},
		{"project_id:%(project_id", "unclosed %(", 1},
		{"user_id:%s", "bad %-format", 1},
	}
	for _, tc := range cases {
		_, err := parseRule(tc.in)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("parse(%q): got %v, want a *ParseError", tc.in, err)
			continue
		}
		if !strings.Contains(pe.Msg, tc.msg) || pe.Column != tc.col || pe.Rule != tc.in {
			t.Errorf("parse(%q): got %q at column %d, want %q at column %d", tc.in, pe.Msg, pe.Column, tc.msg, tc.col)
		}
		if !strings.Contains(err.Error(), tc.in) {
			t.Errorf("parse(%q): error %q does not quote the check string", tc.in, err)
		}
	}
}

func TestParseCheckExported(t *testing.T) {
	c, err := ParseCheck("role:admin or rule:x")
	if err != nil || c.String() != "(role:admin or rule:x)" {
		t.Fatalf("ParseCheck = %v, %v", c, err)
	}
	if _, err := ParseCheck("role:admin or"); err == nil {
		t.Fatal("ParseCheck accepted a dangling or")
	}
}

func TestFormat(t *testing.T) {
	target := map[string]string{"project_id": "p1", "user_id": "", "a(b)": "nested"}
	cases := []struct {
		match, want string
		ok          bool
	}{
		{"plain", "plain", true},
		{"%(project_id)s", "p1", true},
		{"x-%(project_id)s-y", "x-p1-y", true},
		{"%(user_id)s", "None", true}, // empty stands for None
		{"%(missing)s", "", false},    // KeyError: the check is false
		{"100%%", "100%", true},
		{"%(a(b))s", "nested", true}, // Python matches nested parentheses
	}
	for _, tc := range cases {
		f, msg := parseFormat(tc.match)
		if msg != "" {
			t.Fatalf("parseFormat(%q): %s", tc.match, msg)
		}
		got, ok := f.apply(target)
		if got != tc.want || ok != tc.ok {
			t.Errorf("format %q = %q, %v; want %q, %v", tc.match, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPyLiteral(t *testing.T) {
	cases := []struct {
		kind, want string
		ok         bool
	}{
		{"True", "True", true},
		{"False", "False", true},
		{"None", "None", true},
		{"'member'", "member", true},
		{`"member"`, "member", true},
		{"42", "42", true},
		{"-7", "-7", true},
		{"+7", "7", true},
		{"-0", "0", true},
		{"0", "0", true},
		{"007", "", false},
		{"project_id", "", false},
		{"user.enabled", "", false},
		{"true", "", false}, // Python's literals are capitalised
		{"'a'b'", "", false},
	}
	for _, tc := range cases {
		got, ok := pyLiteral(tc.kind)
		if got != tc.want || ok != tc.ok {
			t.Errorf("pyLiteral(%q) = %q, %v; want %q, %v", tc.kind, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseListRule(t *testing.T) {
	cases := []struct {
		in   [][]string
		want string
	}{
		{nil, "@"},
		{[][]string{{}}, "!"},
		{[][]string{{"role:admin"}}, "role:admin"},
		{[][]string{{"role:admin"}, {"role:service"}}, "(role:admin or role:service)"},
		{[][]string{{"role:reader", "project_id:%(project_id)s"}, {}, {"role:admin"}},
			"((role:reader and project_id:%(project_id)s) or role:admin)"},
	}
	for _, tc := range cases {
		c, err := parseListRule(tc.in)
		if err != nil {
			t.Fatalf("parseListRule(%v): %v", tc.in, err)
		}
		if c.String() != tc.want {
			t.Errorf("parseListRule(%v) = %s, want %s", tc.in, c, tc.want)
		}
	}
	if _, err := parseListRule([][]string{{"admin"}}); err == nil {
		t.Error("parseListRule accepted a bare word")
	}
}
