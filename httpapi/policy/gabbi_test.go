package policy

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// gabbiCase is one test of the conformance gabbi files *-rbac.yaml and
// *-policy.yaml, extracted by testdata/gen_gabbi_cases.py.
type gabbiCase struct {
	File        string  `json:"file"`
	Fixture     string  `json:"fixture"`
	Name        string  `json:"name"`
	Method      string  `json:"method"`
	Path        string  `json:"path"`
	Token       string  `json:"token"`
	Roles       *string `json:"roles"`
	Project     *string `json:"project"`
	SystemScope *string `json:"system_scope"`
	Status      int     `json:"status"`
}

// credentials builds what noauth2 + oslo.context make of the headers
// (placement/auth.py NoAuthMiddleware): the token is user[:project];
// x-project-id wins over the token's project; with openstack-system-scope
// the token's project is not used; roles from x-roles, else admin for the
// user admin.
func (c gabbiCase) credentials() Credentials {
	user, project, found := strings.Cut(c.Token, ":")
	if !found || project == "" {
		project = user
	}
	cr := Credentials{UserID: user, IsAdminProject: true}
	if c.SystemScope != nil {
		cr.SystemScope = *c.SystemScope
	} else {
		cr.ProjectID = project
	}
	if c.Project != nil {
		cr.ProjectID = *c.Project
	}
	switch {
	case c.Roles != nil:
		for _, r := range strings.Split(*c.Roles, ",") {
			cr.Roles = append(cr.Roles, strings.TrimSpace(r))
		}
	case user == "admin":
		cr.Roles = []string{"admin"}
	}
	return cr
}

type route struct {
	method string
	re     *regexp.Regexp
	rule   string
}

// routes maps requests to rules using the operations upstream documents
// for each rule.
func routes() []route {
	var out []route
	for _, r := range Rules() {
		for _, op := range r.Operations {
			segs := strings.Split(op.Path, "/")
			for i, s := range segs {
				if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
					segs[i] = `[^/]+`
				} else {
					segs[i] = regexp.QuoteMeta(s)
				}
			}
			re := regexp.MustCompile("^" + strings.Join(segs, "/") + "$")
			out = append(out, route{op.Method, re, r.Name})
		}
	}
	return out
}

func ruleFor(rs []route, method, path string) (string, bool) {
	path, _, _ = strings.Cut(path, "?")
	for _, r := range rs {
		if r.method == method && r.re.MatchString(path) {
			return r.rule, true
		}
	}
	return "", false
}

// TestGabbiCases replays the policy decision of every test in the
// conformance RBAC and open-policy gabbi files: 403 when, and only when,
// the policy refuses (every other status in these files is reached after
// the handler's policy check passes).
func TestGabbiCases(t *testing.T) {
	data, err := os.ReadFile("testdata/gabbi_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []gabbiCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 400 {
		t.Fatalf("only %d cases", len(cases))
	}
	openFile := writeFile(t, "open.yaml", openPolicyYAML())
	enforcers := map[string]*Enforcer{
		// Harness settings (fixtures.server_settings, head): scope always
		// enforced; new defaults only for SecureRBACPolicyFixture.
		"SecureRBACPolicyFixture": newEnforcer(t, Options{EnforceNewDefaults: true, EnforceScope: true}),
		"LegacyRBACPolicyFixture": newEnforcer(t, Options{EnforceNewDefaults: false, EnforceScope: true}),
		"OpenPolicyFixture":       newEnforcer(t, Options{File: openFile, EnforceNewDefaults: false, EnforceScope: true}),
	}
	rs := routes()
	seen := map[string]bool{}
	for _, c := range cases {
		e := enforcers[c.Fixture]
		if e == nil {
			t.Fatalf("%s: unknown fixture %s", c.File, c.Fixture)
		}
		rule, ok := ruleFor(rs, c.Method, c.Path)
		if !ok {
			t.Errorf("%s %q: no rule for %s %s", c.File, c.Name, c.Method, c.Path)
			continue
		}
		seen[rule] = true
		creds := c.credentials()
		target := DefaultTarget(creds)
		if rule == TotalUsages {
			// GET /usages passes {"project_id": <query project_id>}.
			_, query, _ := strings.Cut(c.Path, "?")
			target = map[string]string{"project_id": ""}
			for _, kv := range strings.Split(query, "&") {
				if k, v, _ := strings.Cut(kv, "="); k == "project_id" {
					target["project_id"] = v
				}
			}
		}
		err := e.Authorize(rule, creds, target)
		if got, want := err != nil, c.Status == 403; got != want {
			t.Errorf("%s %q: %s %s as %+v: %s refused = %v (%v), want status %d",
				c.File, c.Name, c.Method, c.Path, creds, rule, got, err, c.Status)
		}
	}
	// Every placement:* rule is exercised by some gabbi file.
	for _, name := range RuleNames() {
		if strings.HasPrefix(name, "placement:") && !seen[name] {
			t.Errorf("no gabbi case checks %s", name)
		}
	}
}
