package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Fuzz targets for the policy language and policy files: an operator's file
// (or a careless one) must give a clear error or an enforcer, never a
// panic or a hang. Seeds: every default rule's check string, the
// conformance suite's open policy file, and files in YAML and JSON (in
// testdata/fuzz/). To fuzz: go test ./httpapi/policy -run '^$' -fuzz
// '^FuzzPolicyFile$' -parallel 1 (or `make fuzz`).

const fuzzBound = 10 * time.Second

func watchdog(what string, input any) *time.Timer {
	// A panic outside the test goroutine stops the fuzz worker, so the
	// fuzzer keeps the input as a crasher.
	return time.AfterFunc(fuzzBound, func() {
		panic(fmt.Sprintf("%s of %q took more than %v", what, input, fuzzBound))
	})
}

// fuzzCredentials are the callers each parsed policy is evaluated for.
var fuzzCredentials = []Credentials{
	{},
	{UserID: "admin", ProjectID: "admin", Roles: []string{"admin"}, IsAdminProject: true},
	{UserID: "u", ProjectID: "p", Roles: []string{"reader", "member"}},
	{UserID: "u", SystemScope: "all", Roles: []string{"Admin", "service"}},
	{UserID: "s", ProjectID: "svc", Roles: []string{"service"}, ServiceRoles: []string{"service"}},
}

// FuzzParseCheck parses check strings. A string that parses prints as a
// check string that parses again to the same print (String is a fixed
// point), and evaluating it never panics; a refusal is a *ParseError.
func FuzzParseCheck(f *testing.F) {
	for _, d := range defaults {
		f.Add(d.check)
	}
	for _, s := range []string{"", "@", "!", "role:admin or (role:reader and system_scope:all)", "not role:x",
		"project_id:%(project_id)s", "'member':%(role.name)s", "True:%(x)s", "rule:missing", "((a:b)", "a:b and",
		"http://x", "%(x)d:y", "role:%%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rule string) {
		w := watchdog("ParseCheck", rule)
		c, err := ParseCheck(rule)
		w.Stop()
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || err.Error() == "" {
				t.Fatalf("ParseCheck(%q): error %T %v is not a ParseError", rule, err, err)
			}
			return
		}
		printed := c.String()
		again, err := ParseCheck(printed)
		if err != nil {
			t.Fatalf("ParseCheck(%q) printed %q, which does not parse: %v", rule, printed, err)
		}
		if again.String() != printed {
			t.Fatalf("ParseCheck(%q) printed %q, which prints as %q", rule, printed, again.String())
		}
		rules := map[string]check{"x": c.root}
		for _, cr := range fuzzCredentials {
			ev := &evaluation{rules: rules, target: DefaultTarget(cr), creds: cr.policyValues(), roles: lower(cr.Roles)}
			c.root.eval(ev)
		}
	})
}

func lower(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	return out
}

// FuzzPolicyFile reads policy files (YAML, or JSON YAML refuses). A file
// that reads builds an enforcer or a clear error (a cycle, a bad rule);
// every registered rule is then decided for a few callers without panic,
// and a rule the file sets to "!" refuses everyone.
func FuzzPolicyFile(f *testing.F) {
	var open strings.Builder
	for _, d := range defaults {
		if d.name != "admin_api" {
			fmt.Fprintf(&open, "%q: \"@\"\n", d.name)
		}
	}
	f.Add([]byte(open.String()))
	f.Add([]byte("admin_api: \"role:admin or role:service\"\n\"placement:resource_providers:list\": \"!\"\n"))
	f.Add([]byte(`{"admin_api": "role:admin", "placement:traits:list": "rule:admin_api or role:reader", "a": "rule:b", "b": "rule:a"}`))
	f.Add([]byte("admin_api:\n  - [\"role:admin\"]\n  - [\"role:x\", \"role:y\"]\n"))
	f.Add([]byte("&a [\"x\"]\nb: *a\n"))
	f.Add([]byte("# empty\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		w := watchdog("policy file", data)
		defer w.Stop()
		rules, err := parseFileContents(data)
		if err != nil {
			return
		}
		e, _, err := build(Options{}, rules)
		if err != nil {
			return
		}
		refusedAll := map[string]bool{}
		for _, fr := range rules {
			if fr.check.String() == "!" {
				refusedAll[fr.name] = true
			}
		}
		for _, d := range defaults {
			for _, cr := range fuzzCredentials {
				err := e.Authorize(d.name, cr, nil)
				var fb *Forbidden
				if err != nil && !errors.As(err, &fb) {
					t.Fatalf("Authorize(%s): %T %v", d.name, err, err)
				}
				if err == nil && refusedAll[d.name] {
					t.Fatalf("rule %s is \"!\" in the file but allowed %+v", d.name, cr)
				}
			}
		}
	})
}
