package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Credentials as the HTTP layer builds them (noauth2 + oslo.context) from
// the headers of the gabbi files' vars: x-auth-token "user" (or "admin"),
// x-roles, x-project-id, openstack-system-scope.
var (
	// x-auth-token: admin, no x-roles: noauth2 gives role admin.
	adminToken = Credentials{UserID: "admin", ProjectID: "admin", Roles: []string{"admin"}}
	// x-auth-token: user, no x-roles: no roles, project "user".
	plainUser = Credentials{UserID: "user", ProjectID: "user"}
	// secure-rbac files' admin_headers / service_headers.
	admin   = Credentials{UserID: "user", ProjectID: "admin_project_id", Roles: []string{"admin"}}
	service = Credentials{UserID: "user", ProjectID: "service_project_id", Roles: []string{"service"}}
	// system_admin_headers / system_reader_headers: no project.
	systemAdmin  = Credentials{UserID: "user", SystemScope: "all", Roles: []string{"admin", "member", "reader"}}
	systemReader = Credentials{UserID: "user", SystemScope: "all", Roles: []string{"reader"}}
	// project_*_headers (x-project-id: $PROJECT_ID) and alt_project_*.
	projectAdmin     = Credentials{UserID: "user", ProjectID: "project_id", Roles: []string{"admin", "member", "reader"}}
	projectMember    = Credentials{UserID: "user", ProjectID: "project_id", Roles: []string{"member", "reader"}}
	projectReader    = Credentials{UserID: "user", ProjectID: "project_id", Roles: []string{"reader"}}
	altProjectAdmin  = Credentials{UserID: "user", ProjectID: "project_id_alt", Roles: []string{"admin", "member", "reader"}}
	altProjectMember = Credentials{UserID: "user", ProjectID: "project_id_alt", Roles: []string{"member", "reader"}}
	altProjectReader = Credentials{UserID: "user", ProjectID: "project_id_alt", Roles: []string{"reader"}}
	// Not in the gabbi files: a domain-scoped admin and a mixed-case role.
	domainAdmin  = Credentials{UserID: "user", DomainID: "default", Roles: []string{"admin"}}
	upperService = Credentials{UserID: "user", ProjectID: "p", Roles: []string{"Service"}}
)

type persona struct {
	name  string
	creds Credentials
}

var personas = []persona{
	{"adminToken", adminToken},
	{"plainUser", plainUser},
	{"admin", admin},
	{"service", service},
	{"systemAdmin", systemAdmin},
	{"systemReader", systemReader},
	{"projectAdmin", projectAdmin},
	{"projectMember", projectMember},
	{"projectReader", projectReader},
	{"altProjectAdmin", altProjectAdmin},
	{"altProjectMember", altProjectMember},
	{"altProjectReader", altProjectReader},
	{"domainAdmin", domainAdmin},
	{"upperService", upperService},
}

// usagesTarget is what GET /usages?project_id=$PROJECT_ID passes.
var usagesTarget = map[string]string{"project_id": "project_id"}

func newEnforcer(t *testing.T, opts Options) *Enforcer {
	t.Helper()
	e, warnings, err := New(opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	if opts.File == "" && len(warnings) > 0 {
		t.Fatalf("New(%+v) warnings without a file: %v", opts, warnings)
	}
	return e
}

func allowed(t *testing.T, e *Enforcer, rule string, c Credentials, target map[string]string) bool {
	t.Helper()
	err := e.Authorize(rule, c, target)
	if err == nil {
		return true
	}
	var f *Forbidden
	if !errors.As(err, &f) {
		t.Fatalf("Authorize(%s): unexpected error %v", rule, err)
	}
	if f.Action != rule {
		t.Fatalf("Forbidden.Action = %q, want %q", f.Action, rule)
	}
	return false
}

// Which personas each kind of rule allows, with enforce_scope on. Names of
// the gabbi tests that decide a case are in the comments.
var (
	// Every placement:* rule but usages and reshape: rule:admin_or_service_api.
	// Legacy ORs role:admin, which changes nothing.
	adminOrServiceAllowed = map[string]bool{
		"adminToken": true,
		"admin":      true, // resource-provider-secure-rbac "admin can list resource providers"
		"service":    true, // resource-provider-secure-rbac "service can list resource providers"
		// systemAdmin/systemReader: refused for scope,
		// resource-provider-{secure,legacy}-rbac "system admin cannot list resource providers"
		"projectAdmin": true, // resource-provider-legacy-rbac "project admin can list resource providers"
		// projectMember/Reader: resource-provider-legacy-rbac "project member cannot list resource providers"
		"altProjectAdmin": true, // an admin is an admin in any project
		"upperService":    true, // role checks ignore case
		// plainUser: resource-provider "non admin forbidden"
		// domainAdmin: refused for scope
	}
	// placement:usages, target project $PROJECT_ID.
	usagesAllowed = map[string]bool{
		"adminToken":   true,
		"admin":        true, // usage-secure-rbac "admin can get total usage for project"
		"service":      true, // usage-secure-rbac "service can get total usage for project"
		"projectAdmin": true, // usage-legacy-rbac "project admin can get total usage for project"
		// usage-secure-rbac "project member can get total usage for project"
		"projectMember": true,
		// usage-secure-rbac "project reader can get total usage for project"
		"projectReader": true,
		// usage-secure-rbac "admin can get total usage for other project"
		"altProjectAdmin": true,
		// altProjectMember/Reader: usage-secure-rbac "project reader cannot get
		// total usage for unauthorized project"; systemAdmin/Reader: "system
		// admin cannot get total usage for project" (scope).
		"upperService": true,
	}
	// placement:reshaper:reshape and service_api, new defaults: role:service.
	serviceOnlyAllowed = map[string]bool{
		"service":      true, // reshaper-secure-rbac "service can reshape"
		"upperService": true,
		// admin: reshaper-secure-rbac "admin cannot reshape"
		// projectAdmin: reshaper-secure-rbac "project admin cannot reshape"
	}
	// Same, legacy: role:service or role:admin.
	serviceOrAdminAllowed = map[string]bool{
		"adminToken":      true, // reshaper "very invalid 400" (admin token gets past policy)
		"admin":           true,
		"service":         true,
		"projectAdmin":    true, // reshaper-legacy-rbac "project admin can reshape"
		"altProjectAdmin": true,
		"upperService":    true,
		// projectMember: reshaper-legacy-rbac "project member cannot reshape"
		// plainUser: reshaper "reshaper requires admin not user"
	}
	// admin_api: role:admin, project scope, no deprecated rule.
	adminOnlyAllowed = map[string]bool{
		"adminToken": true, "admin": true, "projectAdmin": true, "altProjectAdmin": true,
	}
	// project_reader_api has no scope_types, so system and domain tokens
	// are evaluated: "role:reader and project_id:%(project_id)s". Target
	// project $PROJECT_ID.
	projectReaderAllowed = map[string]bool{
		"projectAdmin": true, "projectMember": true, "projectReader": true,
	}
	// Legacy ORs role:admin, whatever the scope.
	projectReaderOrAdminAllowed = map[string]bool{
		"adminToken": true, "admin": true, "projectAdmin": true, "projectMember": true,
		"projectReader": true, "altProjectAdmin": true, "systemAdmin": true, "domainAdmin": true,
	}
)

type expectation struct {
	target         map[string]string
	secure, legacy map[string]bool
}

func expectationFor(rule string) (expectation, bool) {
	switch rule {
	case AdminAPI:
		return expectation{nil, adminOnlyAllowed, adminOnlyAllowed}, true
	case ServiceAPI, Reshape:
		return expectation{nil, serviceOnlyAllowed, serviceOrAdminAllowed}, true
	case AdminOrServiceAPI:
		return expectation{nil, adminOrServiceAllowed, adminOrServiceAllowed}, true
	case ProjectReaderAPI:
		return expectation{usagesTarget, projectReaderAllowed, projectReaderOrAdminAllowed}, true
	case AdminOrProjectReaderOrServiceAPI, TotalUsages:
		return expectation{usagesTarget, usagesAllowed, usagesAllowed}, true
	}
	if strings.HasPrefix(rule, "placement:") {
		return expectation{nil, adminOrServiceAllowed, adminOrServiceAllowed}, true
	}
	return expectation{}, false
}

// TestDefaultRules checks every registered rule under the new defaults
// (SecureRBACPolicyFixture) and the legacy ones (LegacyRBACPolicyFixture),
// scope enforced, for each persona.
func TestDefaultRules(t *testing.T) {
	for _, mode := range []struct {
		name   string
		secure bool
	}{{"secure", true}, {"legacy", false}} {
		e := newEnforcer(t, Options{EnforceNewDefaults: mode.secure, EnforceScope: true})
		for _, rule := range RuleNames() {
			exp, ok := expectationFor(rule)
			if !ok {
				t.Errorf("rule %s has no expectation", rule)
				continue
			}
			want := exp.legacy
			if mode.secure {
				want = exp.secure
			}
			for _, p := range personas {
				if got := allowed(t, e, rule, p.creds, exp.target); got != want[p.name] {
					t.Errorf("%s: %s %s: allowed = %v, want %v (effective %s)",
						mode.name, rule, p.name, got, want[p.name], e.effective(rule))
				}
			}
		}
	}
}

func TestEffectiveDefaults(t *testing.T) {
	secure := newEnforcer(t, Options{EnforceNewDefaults: true, EnforceScope: true})
	legacy := newEnforcer(t, Options{EnforceNewDefaults: false, EnforceScope: true})
	cases := []struct{ rule, secure, legacy string }{
		{AdminAPI, "role:admin", "role:admin"},
		{ServiceAPI, "role:service", "(role:service or role:admin)"},
		{AdminOrServiceAPI, "(role:admin or role:service)", "((role:admin or role:service) or role:admin)"},
		{ProjectReaderAPI, "(role:reader and project_id:%(project_id)s)",
			"((role:reader and project_id:%(project_id)s) or role:admin)"},
		{AdminOrProjectReaderOrServiceAPI, "(role:admin or rule:project_reader_api or role:service)",
			"((role:admin or rule:project_reader_api or role:service) or role:admin)"},
		{ResourceProvidersList, "rule:admin_or_service_api", "rule:admin_or_service_api"},
		{TotalUsages, "rule:admin_or_project_reader_or_service_api", "rule:admin_or_project_reader_or_service_api"},
		{Reshape, "rule:service_api", "rule:service_api"},
	}
	for _, tc := range cases {
		if got := secure.effective(tc.rule); got != tc.secure {
			t.Errorf("secure %s = %s, want %s", tc.rule, got, tc.secure)
		}
		if got := legacy.effective(tc.rule); got != tc.legacy {
			t.Errorf("legacy %s = %s, want %s", tc.rule, got, tc.legacy)
		}
	}
}

// policyRuleNames is fixtures.py's POLICY_RULE_NAMES (upstream HEAD).
var policyRuleNames = []string{
	"admin_api", "service_api", "admin_or_service_api", "project_reader_api",
	"admin_or_project_reader_or_service_api",
	"placement:resource_providers:list", "placement:resource_providers:create",
	"placement:resource_providers:show", "placement:resource_providers:update",
	"placement:resource_providers:delete",
	"placement:resource_classes:list", "placement:resource_classes:create",
	"placement:resource_classes:show", "placement:resource_classes:update",
	"placement:resource_classes:delete",
	"placement:resource_providers:inventories:list", "placement:resource_providers:inventories:create",
	"placement:resource_providers:inventories:show", "placement:resource_providers:inventories:update",
	"placement:resource_providers:inventories:delete",
	"placement:resource_providers:aggregates:list", "placement:resource_providers:aggregates:update",
	"placement:resource_providers:usages", "placement:usages",
	"placement:traits:list", "placement:traits:show", "placement:traits:update", "placement:traits:delete",
	"placement:resource_providers:traits:list", "placement:resource_providers:traits:update",
	"placement:resource_providers:traits:delete",
	"placement:allocations:manage", "placement:allocations:list", "placement:allocations:update",
	"placement:allocations:delete", "placement:resource_providers:allocations:list",
	"placement:allocation_candidates:list", "placement:reshaper:reshape",
}

func TestRuleNames(t *testing.T) {
	want := append([]string(nil), policyRuleNames...)
	sort.Strings(want)
	if got := RuleNames(); !reflect.DeepEqual(got, want) {
		t.Errorf("RuleNames() = %v\nwant %v", got, want)
	}
	// Rules() agrees and documents an operation for every placement:* rule.
	for _, r := range Rules() {
		if strings.HasPrefix(r.Name, "placement:") && len(r.Operations) == 0 {
			t.Errorf("%s has no operations", r.Name)
		}
		if strings.HasPrefix(r.Name, "placement:") && !reflect.DeepEqual(r.ScopeTypes, []string{"project"}) {
			t.Errorf("%s scope types = %v", r.Name, r.ScopeTypes)
		}
		if _, err := ParseCheck(r.Check); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
	}
}

func TestScope(t *testing.T) {
	scoped := newEnforcer(t, Options{EnforceNewDefaults: true, EnforceScope: true})
	// resource-provider-secure-rbac "system admin cannot list resource providers"
	err := scoped.Authorize(ResourceProvidersList, systemAdmin, nil)
	var f *Forbidden
	if !errors.As(err, &f) || f.Scope != "system" {
		t.Fatalf("system admin: got %v, want Forbidden for scope system", err)
	}
	if err := scoped.Authorize(ResourceProvidersList, domainAdmin, nil); !errors.As(err, &f) || f.Scope != "domain" {
		t.Fatalf("domain admin: got %v, want Forbidden for scope domain", err)
	}
	// Refused by the rule, not the scope.
	if err := scoped.Authorize(ResourceProvidersList, projectReader, nil); !errors.As(err, &f) || f.Scope != "" {
		t.Fatalf("project reader: got %v, want Forbidden by rule", err)
	}
	// project_reader_api has no scope_types: a system-scoped reader is
	// evaluated, and with no project on either side "None" == "None".
	if !allowed(t, scoped, ProjectReaderAPI, systemReader, map[string]string{"project_id": ""}) {
		t.Error("project_reader_api: system reader with None target project refused")
	}

	// enforce_scope off (--fixture-version 8.0.0): a system admin is an
	// admin; a system reader has no project to match.
	for _, secure := range []bool{true, false} {
		open := newEnforcer(t, Options{EnforceNewDefaults: secure, EnforceScope: false})
		if !allowed(t, open, ResourceProvidersList, systemAdmin, nil) {
			t.Errorf("secure=%v, no scope: system admin cannot list providers", secure)
		}
		if !allowed(t, open, ResourceProvidersList, domainAdmin, nil) {
			t.Errorf("secure=%v, no scope: domain admin cannot list providers", secure)
		}
		if allowed(t, open, TotalUsages, systemReader, usagesTarget) {
			t.Errorf("secure=%v, no scope: system reader can read project usages", secure)
		}
		if allowed(t, open, ResourceProvidersList, systemReader, nil) {
			t.Errorf("secure=%v, no scope: system reader can list providers", secure)
		}
	}
}

func TestForbiddenAndNotRegistered(t *testing.T) {
	e := newEnforcer(t, Options{EnforceScope: true})
	err := e.Authorize(ResourceProvidersList, plainUser, nil)
	// The detail upstream's PolicyNotAuthorized gives the 403.
	if err == nil || err.Error() != "Policy does not allow placement:resource_providers:list to be performed." {
		t.Fatalf("got %v", err)
	}
	err = e.Authorize(ResourceProvidersList, systemAdmin, nil)
	if err == nil || err.Error() != "Policy does not allow placement:resource_providers:list to be performed." {
		t.Fatalf("scope refusal: got %v", err)
	}
	err = e.Authorize("placement:nope", adminToken, nil)
	var nr *NotRegisteredError
	if !errors.As(err, &nr) || nr.Name != "placement:nope" {
		t.Fatalf("unregistered rule: got %v", err)
	}
	// Only registered rules, not helper rules from a file.
	e2, _, err := build(Options{}, fileRules(t, "helper: \"@\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e2.Authorize("helper", adminToken, nil); !errors.As(err, &nr) {
		t.Fatalf("file-only rule: got %v", err)
	}
}

func fileRules(t *testing.T, content string) []fileRule {
	t.Helper()
	rules, err := parseFileContents([]byte(content))
	if err != nil {
		t.Fatalf("parseFileContents: %v", err)
	}
	return rules
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// openPolicyYAML is fixtures.open_policy_yaml(): OpenPolicyFixture's file.
func openPolicyYAML() string {
	lines := []string{"# Every Placement policy rule except admin_api allows anyone."}
	for _, name := range policyRuleNames {
		if name != "admin_api" {
			lines = append(lines, fmt.Sprintf("%q: \"@\"", name))
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestOpenPolicyFixture(t *testing.T) {
	path := writeFile(t, "policy.yaml", openPolicyYAML())
	e, warnings, err := New(Options{File: path, EnforceNewDefaults: false, EnforceScope: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	for _, rule := range RuleNames() {
		// resource-provider-policy "list resource providers" etc.: a user
		// with no roles; reshaper-policy "attempt reshape" gets to 400.
		want := rule != AdminAPI
		if got := allowed(t, e, rule, plainUser, nil); got != want {
			t.Errorf("%s: plain user allowed = %v, want %v", rule, got, want)
		}
		// usage-policy "get total usages for project": any target.
		if got := allowed(t, e, rule, plainUser, usagesTarget); got != want {
			t.Errorf("%s: plain user on other project allowed = %v, want %v", rule, got, want)
		}
		// admin_api keeps role:admin.
		if !allowed(t, e, rule, adminToken, nil) {
			t.Errorf("%s: admin refused", rule)
		}
		// Scope still applies to "@" rules (scope_types are the
		// registered rule's), except project_reader_api which has none.
		want = rule == ProjectReaderAPI
		if got := allowed(t, e, rule, systemAdmin, nil); got != want {
			t.Errorf("%s: system admin allowed = %v, want %v", rule, got, want)
		}
	}
}

func TestPolicyFileOverridesYAMLAndJSON(t *testing.T) {
	files := map[string]string{
		"policy.yaml": `
# override one rule
"placement:resource_providers:list": "role:reader and project_id:%(project_id)s"
placement:traits:list: role:member
`,
		"policy.json": `{
	"placement:resource_providers:list": "role:reader and project_id:%(project_id)s",
	"placement:traits:list": "role:member"
}`,
		"list.json": `{"placement:resource_providers:list": [["role:reader", "project_id:%(project_id)s"]],
"placement:traits:list": ["role:member"]}`,
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			for _, secure := range []bool{true, false} {
				e, warnings, err := New(Options{File: writeFile(t, name, content), EnforceNewDefaults: secure, EnforceScope: true})
				if err != nil {
					t.Fatal(err)
				}
				if len(warnings) != 0 {
					t.Errorf("warnings: %v", warnings)
				}
				// The overridden rules.
				if !allowed(t, e, ResourceProvidersList, projectReader, nil) {
					t.Error("reader of own project cannot list providers")
				}
				if allowed(t, e, ResourceProvidersList, projectReader, map[string]string{"project_id": "other"}) {
					t.Error("reader can list providers of another project")
				}
				if allowed(t, e, ResourceProvidersList, admin, nil) {
					t.Error("admin without reader role can still list providers")
				}
				if !allowed(t, e, TraitsList, projectMember, nil) || allowed(t, e, TraitsList, service, nil) {
					t.Error("traits:list override not applied")
				}
				// Scope still from the registered rule.
				if allowed(t, e, TraitsList, Credentials{SystemScope: "all", Roles: []string{"member"}}, nil) {
					t.Error("system-scoped member allowed")
				}
				// The others keep their defaults.
				if !allowed(t, e, ResourceProvidersCreate, admin, nil) || allowed(t, e, ResourceProvidersCreate, projectReader, nil) {
					t.Error("resource_providers:create lost its default")
				}
			}
		})
	}
}

func TestPolicyFileBaseRuleOverride(t *testing.T) {
	path := writeFile(t, "policy.yaml", `admin_or_service_api: "role:operator"`+"\n")
	for _, secure := range []bool{true, false} {
		e, _, err := New(Options{File: path, EnforceNewDefaults: secure, EnforceScope: true})
		if err != nil {
			t.Fatal(err)
		}
		operator := Credentials{UserID: "u", ProjectID: "p", Roles: []string{"operator"}}
		if !allowed(t, e, ResourceProvidersList, operator, nil) {
			t.Errorf("secure=%v: operator refused", secure)
		}
		// The file replaces the rule: no deprecated role:admin OR-ed in,
		// even with enforce_new_defaults false (oslo.policy skips rules the
		// file names).
		if allowed(t, e, ResourceProvidersList, admin, nil) {
			t.Errorf("secure=%v: admin still allowed", secure)
		}
		if got := e.effective(AdminOrServiceAPI); got != "role:operator" {
			t.Errorf("effective = %s", got)
		}
		// Rules not using it are unchanged.
		if allowed(t, e, Reshape, operator, nil) || !allowed(t, e, Reshape, service, nil) {
			t.Errorf("secure=%v: reshape changed", secure)
		}
	}
}

// A policy file key naming the deprecated rule ("rule:admin_api", its
// literal upstream name) with another check string replaces the new
// default of every rule deprecating it that the file does not name.
func TestPolicyFileDeprecatedRuleOverride(t *testing.T) {
	superuser := Credentials{UserID: "u", ProjectID: "p", Roles: []string{"superuser"}}
	path := writeFile(t, "policy.yaml", `
"rule:admin_api": "role:superuser"
"admin_or_service_api": "role:admin"
`)
	for _, secure := range []bool{true, false} {
		e, warnings, err := New(Options{File: path, EnforceNewDefaults: secure, EnforceScope: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(warnings) != 0 {
			t.Errorf("warnings: %v", warnings)
		}
		if got := e.effective(ServiceAPI); got != "role:superuser" {
			t.Errorf("secure=%v: service_api = %s", secure, got)
		}
		if !allowed(t, e, Reshape, superuser, nil) || allowed(t, e, Reshape, service, nil) {
			t.Errorf("secure=%v: reshape not role:superuser", secure)
		}
		// Named in the file: the file's own check string.
		if got := e.effective(AdminOrServiceAPI); got != "role:admin" {
			t.Errorf("secure=%v: admin_or_service_api = %s", secure, got)
		}
		// admin_api has no deprecated rule.
		if got := e.effective(AdminAPI); got != "role:admin" {
			t.Errorf("secure=%v: admin_api = %s", secure, got)
		}
	}
	// Overriding it with its own default check string changes nothing.
	path = writeFile(t, "policy.yaml", `"rule:admin_api": "role:admin"`+"\n")
	e, _, err := New(Options{File: path, EnforceScope: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.effective(ServiceAPI); got != "(role:service or role:admin)" {
		t.Errorf("service_api = %s", got)
	}
}

func TestPolicyFileWarnings(t *testing.T) {
	path := writeFile(t, "policy.yaml", `
# a typo: not a Placement rule, nothing refers to it
"placement:resource_provider:list": "@"
# a helper rule that a registered rule uses: no warning
"my_operators": "role:operator"
"admin_or_service_api": "rule:my_operators or role:admin"
# a reference to a rule that does not exist
"placement:traits:list": "rule:no_such_rule or role:admin"
# the same as the default
"placement:traits:show": "rule:admin_or_service_api"
`)
	e, warnings, err := New(Options{File: path, EnforceScope: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`policy file rule "placement:traits:show" (P line 10) is the same as the default "rule:admin_or_service_api"`,
		`policy rule "placement:traits:list" refers to undefined rule "no_such_rule", which is false`,
		`policy file rule "placement:resource_provider:list" (P line 3) is not a Placement policy and no rule refers to it; it has no effect`,
	}
	for i := range warnings {
		warnings[i] = strings.ReplaceAll(warnings[i], path, "P")
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
	operator := Credentials{UserID: "u", ProjectID: "p", Roles: []string{"operator"}}
	if !allowed(t, e, ResourceProvidersList, operator, nil) {
		t.Error("helper rule not applied")
	}
	if allowed(t, e, TraitsList, operator, nil) || !allowed(t, e, TraitsList, admin, nil) {
		t.Error("undefined rule reference should be false")
	}
}

// A "default" rule (oslo.policy's policy_default_rule) stands in for rules
// that are referred to but not defined.
func TestPolicyFileDefaultRule(t *testing.T) {
	path := writeFile(t, "policy.yaml", `
default: "role:fallback"
"placement:traits:list": "rule:no_such_rule"
`)
	e, warnings, err := New(Options{File: path, EnforceScope: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`policy rule "placement:traits:list" refers to undefined rule "no_such_rule"; the "default" rule applies instead`}
	if !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings = %q", warnings)
	}
	fallback := Credentials{UserID: "u", ProjectID: "p", Roles: []string{"fallback"}}
	if !allowed(t, e, TraitsList, fallback, nil) || allowed(t, e, TraitsShow, fallback, nil) {
		t.Error("default rule not applied to the undefined reference only")
	}
}

func TestPolicyFileErrors(t *testing.T) {
	cases := []struct{ name, content, want string }{
		{"syntax.yaml", "a: role:x\n\"placement:traits:list\": \"role:admin or\"\n",
			`line 2: rule "placement:traits:list": invalid check string: column 12: check string ends after (...); expected a check, 'not' or '('`},
		{"bare.yaml", `"placement:traits:list": "admin"`, `column 1: (...) is not a check: expected kind:match (such as role:admin or rule:admin_api), "@" or "!"`},
		{"notmap.yaml", "- role:admin\n", "expected a mapping"},
		{"bool.yaml", "\"placement:traits:list\": true\n", "must be a string, not !!bool"},
		{"badyaml.yaml", "\"placement:traits:list\": \"unterminated\n", "not valid YAML or JSON"},
		{"badjson.json", `{"placement:traits:list": "role:admin"`, "not valid YAML or JSON"},
		{"badtabjson.json", "{\n\t\"placement:traits:list\": \"role:admin\"\n", "not valid YAML or JSON"},
		{"cycle.yaml", "a: rule:b\nb: rule:a or role:x\n\"placement:traits:list\": rule:a\n", "cycle: a -> b -> a"},
		{"selfcycle.yaml", "admin_or_service_api: rule:admin_or_service_api\n", "cycle: admin_or_service_api -> admin_or_service_api"},
		{"defaultcycle.yaml", "default: rule:nothing\n", "cycle: default -> default"},
	}
	for _, tc := range cases {
		path := writeFile(t, tc.name, tc.content)
		_, _, err := New(Options{File: path})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want error containing %q", tc.name, err, tc.want)
		}
		if err != nil && !strings.Contains(tc.want, "cycle") && !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name the file", tc.name, err)
		}
	}
	if _, _, err := New(Options{File: filepath.Join(t.TempDir(), "missing.yaml")}); err == nil {
		t.Error("missing policy file accepted")
	}
}

func TestPolicyFileEdgeCases(t *testing.T) {
	// Empty and comment-only files: defaults.
	for _, content := range []string{"", "# nothing\n", "---\n", "{}"} {
		e, warnings, err := New(Options{File: writeFile(t, "p.yaml", content), EnforceScope: true})
		if err != nil || len(warnings) != 0 {
			t.Fatalf("%q: %v %v", content, err, warnings)
		}
		if allowed(t, e, ResourceProvidersList, plainUser, nil) {
			t.Errorf("%q: defaults lost", content)
		}
	}
	// A null or empty value allows everyone; the last duplicate wins;
	// YAML anchors work.
	e, _, err := New(Options{EnforceScope: true, File: writeFile(t, "p.yaml", `
"placement:traits:list":
"placement:traits:show": ""
"placement:traits:update": "!"
"placement:traits:update": &open "@"
"placement:traits:delete": *open
`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range []string{TraitsList, TraitsShow, TraitsUpdate, TraitsDelete} {
		if !allowed(t, e, rule, plainUser, nil) {
			t.Errorf("%s refused", rule)
		}
	}

	// JSON that YAML parsers refuse (the \/ escape, a leading tab) is read
	// as JSON; so is the old list syntax and a null.
	e, warnings, err := New(Options{EnforceScope: true, File: writeFile(t, "p.json",
		"\t{\"placement:traits:list\": \"role:ops\\/admin\", \"placement:traits:show\": [[\"role:a\", \"role:b\"], [\"role:c\"]],\n"+
			"\"placement:traits:update\": null, \"helper\": \"@\"}")})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"helper"`) {
		t.Errorf("warnings = %q", warnings)
	}
	if got := e.effective(TraitsList); got != "role:ops/admin" {
		t.Errorf("traits:list = %s", got)
	}
	if got := e.effective(TraitsShow); got != "((role:a and role:b) or role:c)" {
		t.Errorf("traits:show = %s", got)
	}
	if got := e.effective(TraitsUpdate); got != "@" {
		t.Errorf("traits:update = %s", got)
	}
	_, _, err = New(Options{File: writeFile(t, "p.json", "\t{\"placement:traits:list\": 3}")})
	if err == nil || !strings.Contains(err.Error(), `rule "placement:traits:list": check string must be a string`) {
		t.Errorf("JSON number: %v", err)
	}
}

// Generic checks compare a credential field (or a literal) with the match,
// which may take values from the target.
func TestGenericChecks(t *testing.T) {
	c := Credentials{
		UserID: "u1", ProjectID: "p1", ProjectDomainID: "d1", Roles: []string{"Reader", "member"},
		IsAdminProject: true, ServiceRoles: []string{"service"}, ServiceUserID: "nova",
	}
	sys := Credentials{UserID: "u1", SystemScope: "all", Roles: []string{"admin"}}
	target := map[string]string{"project_id": "p1", "user_id": "u1", "role": "MEMBER", "none": "", "flag": "True"}
	cases := []struct {
		check string
		creds Credentials
		want  bool
	}{
		{"project_id:%(project_id)s", c, true},
		{"user_id:%(user_id)s", c, true},
		{"user_id:%(project_id)s", c, false},
		{"project_id:%(missing)s", c, false},
		{"project_id:p1", c, true},
		{"project_domain_id:d1", c, true},
		{"domain_id:%(none)s", c, true}, // None == None
		{"roles:member", c, true},       // list: any element, case-sensitive
		{"roles:reader", c, false},
		{"role:reader", c, true}, // role: case-insensitive
		{"role:%(role)s", c, true},
		{"role:%(missing)s", c, false},
		{"service_roles:service", c, true},
		{"service_user_id:nova", c, true},
		{"is_admin_project:True", c, true},
		{"is_admin_project:False", Credentials{}, true},
		// oslo.context does not give is_admin to policy.
		{"is_admin:True", c, false},
		{"is_admin:False", c, false},
		{"system_scope:all", sys, true},
		{"system:all", sys, true},
		{"system_scope:all", c, false},
		{"system_scope:None", c, true},
		{"'MEMBER':%(role)s", c, true}, // literal
		{"'member':%(role)s", c, false},
		{"True:%(flag)s", c, true},
		{"None:%(none)s", c, true},
		{"project_id.x:p1", c, false}, // no nested values
		{"no_such_field:x", c, false},
		{"rule:no_such_rule", c, false},
		{"not role:admin and project_id:%(project_id)s", c, true},
	}
	for _, tc := range cases {
		chk := mustParse(t, tc.check)
		e, _, err := build(Options{}, []fileRule{{name: ResourceProvidersList, check: chk}})
		if err != nil {
			t.Fatal(err)
		}
		if got := allowed(t, e, ResourceProvidersList, tc.creds, target); got != tc.want {
			t.Errorf("%s for %+v: %v, want %v", tc.check, tc.creds, got, tc.want)
		}
	}
}

func TestDefaultTarget(t *testing.T) {
	chk := mustParse(t, "project_id:%(project_id)s and user_id:%(user_id)s")
	e, _, err := build(Options{EnforceScope: true}, []fileRule{{name: ResourceProvidersList, check: chk}})
	if err != nil {
		t.Fatal(err)
	}
	if !allowed(t, e, ResourceProvidersList, projectReader, nil) {
		t.Error("nil target is not the request's own project and user")
	}
	if allowed(t, e, ResourceProvidersList, projectReader, map[string]string{"project_id": "x", "user_id": "user"}) {
		t.Error("explicit target ignored")
	}
}

func TestConcurrentAuthorize(t *testing.T) {
	e := newEnforcer(t, Options{EnforceNewDefaults: true, EnforceScope: true})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				for _, p := range personas {
					_ = e.Authorize(TotalUsages, p.creds, usagesTarget)
					_ = e.Authorize(Reshape, p.creds, nil)
				}
			}
		}()
	}
	wg.Wait()
}

// policy_dirs: the files of each directory are read after policy_file,
// in name order, a later file's rule replacing an earlier one; a missing
// directory is skipped.
func TestPolicyDirs(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"00-defaults.yaml": "# every rule commented out, as Debian installs it\n",
		"10-traits.yaml":   `placement:traits:list: role:service` + "\n",
		"20-traits.yaml":   `placement:traits:list: role:reader` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := writeFile(t, "policy.yaml", `placement:traits:list: "!"`+"\n"+`placement:resource_providers:list: "!"`+"\n")
	e, _, err := New(Options{File: file, Dirs: []string{filepath.Join(dir, "missing"), dir}, EnforceScope: true})
	if err != nil {
		t.Fatal(err)
	}
	if !allowed(t, e, TraitsList, projectReader, nil) || allowed(t, e, TraitsList, service, nil) {
		t.Error("the last file of the dir does not decide traits:list")
	}
	if allowed(t, e, ResourceProvidersList, admin, nil) {
		t.Error("policy_file's rule lost")
	}
	if err := os.WriteFile(filepath.Join(dir, "30-bad.yaml"), []byte("x: ("), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := New(Options{Dirs: []string{dir}}); err == nil || !strings.Contains(err.Error(), "30-bad.yaml") {
		t.Errorf("a bad file in a policy dir: %v", err)
	}
}
