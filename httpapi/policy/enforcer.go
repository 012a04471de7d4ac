package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Options configures an Enforcer, like oslo.policy's [oslo_policy] options.
type Options struct {
	// File is the path of a policy file (YAML, or JSON) whose rules replace
	// the defaults of the rules they name. Empty: defaults only. Unlike
	// oslo.policy, which quietly ignores a missing policy_file, a File that
	// cannot be read is an error.
	File string
	// Dirs are directories of more policy files, as [oslo_policy]
	// policy_dirs: the files of each directory, in name order, are read
	// after File, a rule named again replacing the earlier one. A
	// directory that does not exist is skipped, as oslo.policy does.
	Dirs []string
	// EnforceNewDefaults: false ORs each rule that has a deprecated rule
	// with the deprecated check string (upstream's legacy defaults); true
	// evaluates the new default alone.
	EnforceNewDefaults bool
	// EnforceScope refuses a request whose token scope is not in the rule's
	// scope_types before evaluating the rule.
	EnforceScope bool
}

// Credentials are the policy values of a request, as oslo.context's
// RequestContext.to_policy_values() gives them to oslo.policy. Checks such
// as "user_id:%(user_id)s" read these fields by their upstream names
// (user_id, user_domain_id, system_scope, domain_id, project_id,
// project_domain_id, roles, is_admin_project, service_user_id,
// service_user_domain_id, service_project_id, service_project_domain_id,
// service_roles, and system when system scoped).
//
// An empty string stands for an absent header (Python's None, which checks
// compare as "None"). The request context's is_admin flag is not a policy
// value upstream, so "is_admin:True" is always false, as it is in Placement.
type Credentials struct {
	UserID          string
	UserDomainID    string
	ProjectID       string // empty when system scoped (noauth2 does not set it)
	ProjectDomainID string
	DomainID        string // non-empty makes the token domain scoped
	SystemScope     string // "all" when system scoped (OpenStack-System-Scope), else ""
	// Roles as sent (X-Roles, comma-separated, spaces trimmed). Role checks
	// compare case-insensitively.
	Roles []string
	// IsAdminProject is oslo.context's is_admin_project: true unless an
	// X-Is-Admin-Project header says otherwise. No Placement rule uses it.
	IsAdminProject bool

	ServiceUserID          string
	ServiceUserDomainID    string
	ServiceProjectID       string
	ServiceProjectDomainID string
	ServiceRoles           []string
}

// Scope is the token's scope as oslo.policy sees it: "system", "domain" or
// "project".
func (c Credentials) Scope() string {
	switch {
	case c.SystemScope != "":
		return "system"
	case c.DomainID != "":
		return "domain"
	}
	return "project"
}

// DefaultTarget is the target upstream's RequestContext.can uses when the
// handler passes none: the request's own project and user.
func DefaultTarget(c Credentials) map[string]string {
	return map[string]string{"project_id": c.ProjectID, "user_id": c.UserID}
}

func pyStr(s string) string {
	if s == "" {
		return "None"
	}
	return s
}

func (c Credentials) policyValues() map[string][]string {
	one := func(s string) []string { return []string{pyStr(s)} }
	isAdminProject := "False"
	if c.IsAdminProject {
		isAdminProject = "True"
	}
	m := map[string][]string{
		"user_id":                   one(c.UserID),
		"user_domain_id":            one(c.UserDomainID),
		"system_scope":              one(c.SystemScope),
		"domain_id":                 one(c.DomainID),
		"project_id":                one(c.ProjectID),
		"project_domain_id":         one(c.ProjectDomainID),
		"roles":                     c.Roles,
		"is_admin_project":          {isAdminProject},
		"service_user_id":           one(c.ServiceUserID),
		"service_user_domain_id":    one(c.ServiceUserDomainID),
		"service_project_id":        one(c.ServiceProjectID),
		"service_project_domain_id": one(c.ServiceProjectDomainID),
		"service_roles":             c.ServiceRoles,
	}
	if c.SystemScope != "" {
		m["system"] = []string{c.SystemScope}
	}
	return m
}

// Forbidden is the error Authorize returns when the policy refuses a
// request; the API answers 403 with Error() as the detail, like upstream's
// PolicyNotAuthorized.
type Forbidden struct {
	Action string // the rule name
	// Scope is set when the request was refused for its token scope (the
	// token's scope, not in the rule's scope_types) rather than by the rule.
	Scope string
}

func (f *Forbidden) Error() string {
	return "Policy does not allow " + f.Action + " to be performed."
}

// NotRegisteredError is returned by Authorize for a rule name that is not
// registered: a programming error (upstream: PolicyNotRegistered, a 500).
type NotRegisteredError struct{ Name string }

func (e *NotRegisteredError) Error() string {
	return "Policy " + e.Name + " has not been registered"
}

// Enforcer holds the effective rules. It is immutable and safe for
// concurrent use.
type Enforcer struct {
	opts  Options
	rules map[string]check
}

// compiled defaults, parsed once.
var (
	defaultChecks    = map[string]check{}
	deprecatedChecks = map[string]check{}
)

func init() {
	for _, d := range defaults {
		c, err := parseRule(d.check)
		if err != nil {
			panic("policy: default " + d.name + ": " + err.Error())
		}
		defaultChecks[d.name] = c
		if d.deprecated != nil {
			c, err := parseRule(d.deprecated.check)
			if err != nil {
				panic("policy: deprecated " + d.deprecated.name + ": " + err.Error())
			}
			deprecatedChecks[d.name] = c
		}
	}
}

// New builds an Enforcer from the registered defaults and, if opts.File is
// set, the policy file. It fails (the server should refuse to start) when
// the file cannot be read, is not a YAML/JSON mapping of names to check
// strings, has a check string that does not parse, or has rules that refer
// to each other in a cycle. oslo.policy would instead make an unparsable
// rule refuse everyone and recurse forever on a cycle.
//
// The warnings are for the operator: policy file rules that neither match a
// registered rule nor are referred to by one (so have no effect), rules
// referring to undefined rules (false, unless a "default" rule exists), and
// rules identical to the default.
func New(opts Options) (*Enforcer, []string, error) {
	var file []fileRule
	if opts.File != "" {
		var err error
		if file, err = loadFile(opts.File); err != nil {
			return nil, nil, err
		}
	}
	for _, dir := range opts.Dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("policy dir: %w", err)
		}
		for _, e := range entries { // in name order
			if !e.Type().IsRegular() {
				continue
			}
			more, err := loadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, nil, err
			}
			file = append(file, more...)
		}
	}
	return build(opts, file)
}

func build(opts Options, file []fileRule) (*Enforcer, []string, error) {
	rules := make(map[string]check, len(defaults)+len(file))
	fileChecks := make(map[string]check, len(file))
	var warnings []string
	for _, fr := range file {
		rules[fr.name] = fr.check
		fileChecks[fr.name] = fr.check
		if d, ok := defaultsByName[fr.name]; ok && fr.check.String() == defaultChecks[d.name].String() {
			warnings = append(warnings, fmt.Sprintf(
				"policy file rule %q (%s) is the same as the default %q", fr.name, fr.where(), d.check))
		}
	}
	deprecatedNames := map[string]bool{}
	for _, d := range defaults {
		if d.deprecated != nil {
			deprecatedNames[d.deprecated.name] = true
		}
		if _, overridden := rules[d.name]; overridden {
			continue
		}
		rules[d.name] = effectiveDefault(opts, &d, fileChecks)
	}

	if cyc := findCycle(rules); cyc != nil {
		for i, name := range cyc {
			if !policyNameRE.MatchString(name) {
				cyc[i] = "(name not shown)"
			}
		}
		return nil, nil, fmt.Errorf("policy rules refer to each other in a cycle: %s", strings.Join(cyc, " -> "))
	}

	// Rules that registered rules use, directly or through others.
	reached := map[string]bool{}
	var visit func(string)
	visit = func(name string) {
		if reached[name] {
			return
		}
		reached[name] = true
		refs(rules[name], func(ref string) {
			if _, ok := rules[ref]; ok {
				visit(ref)
			} else if _, ok := rules[defaultRuleName]; ok {
				visit(defaultRuleName)
			}
		})
	}
	for _, d := range defaults {
		visit(d.name)
	}

	names := make([]string, 0, len(rules))
	for name := range rules {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var undefined []string
		refs(rules[name], func(ref string) {
			if _, ok := rules[ref]; !ok {
				undefined = append(undefined, ref)
			}
		})
		for _, ref := range undefined {
			w := fmt.Sprintf("policy rule %s refers to undefined rule %s, which is false", shownName(name), shownName(ref))
			if _, ok := rules[defaultRuleName]; ok {
				w = fmt.Sprintf("policy rule %s refers to undefined rule %s; the %q rule applies instead",
					shownName(name), shownName(ref), defaultRuleName)
			}
			warnings = append(warnings, w)
		}
	}
	var unknown []fileRule
	for _, fr := range file {
		if _, registered := defaultsByName[fr.name]; registered || deprecatedNames[fr.name] || reached[fr.name] {
			continue
		}
		unknown = append(unknown, fr)
	}
	sort.SliceStable(unknown, func(i, j int) bool { return unknown[i].name < unknown[j].name })
	for _, fr := range unknown {
		warnings = append(warnings, fmt.Sprintf(
			"policy file rule %s (%s) is not a Placement policy and no rule refers to it; it has no effect", shownName(fr.name), fr.where()))
	}
	return &Enforcer{opts: opts, rules: rules}, warnings, nil
}

// effectiveDefault is oslo.policy's handling of a registered rule the
// policy file does not override (Enforcer._handle_deprecated_rule).
func effectiveDefault(opts Options, d *ruleDefault, file map[string]check) check {
	newCheck := defaultChecks[d.name]
	if d.deprecated == nil {
		return newCheck
	}
	oldCheck := deprecatedChecks[d.name]
	// A file overriding the deprecated rule's name (here "rule:admin_api")
	// with something else replaces the new default outright.
	if d.deprecated.name != d.name {
		if fc, ok := file[d.deprecated.name]; ok {
			if fc.String() != oldCheck.String() && fc.String() != "rule:"+d.name {
				return fc
			}
		}
	}
	if !opts.EnforceNewDefaults && d.deprecated.check != d.check {
		return orCheck{newCheck, oldCheck}
	}
	return newCheck
}

// findCycle returns a rule:... reference cycle, or nil.
func findCycle(rules map[string]check) []string {
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var stack []string
	var cycle []string
	var dfs func(string) bool
	dfs = func(name string) bool {
		switch state[name] {
		case active:
			for i, n := range stack {
				if n == name {
					cycle = append(append([]string(nil), stack[i:]...), name)
					return true
				}
			}
		case done:
			return false
		}
		state[name] = active
		stack = append(stack, name)
		found := false
		refs(rules[name], func(ref string) {
			if found {
				return
			}
			next := ref
			if _, ok := rules[ref]; !ok {
				if _, ok := rules[defaultRuleName]; !ok {
					return
				}
				next = defaultRuleName
			}
			found = dfs(next)
		})
		stack = stack[:len(stack)-1]
		state[name] = done
		return found
	}
	names := make([]string, 0, len(rules))
	for name := range rules {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if dfs(name) {
			return cycle
		}
	}
	return nil
}

// Authorize checks the registered rule name (such as
// "placement:resource_providers:list") for creds against target, the way
// upstream's RequestContext.can does. target holds what the handler passes
// upstream; nil means DefaultTarget(creds). A target key a check refers to
// but the target lacks makes that check false; an empty value stands for
// None.
//
// It returns nil when allowed, *Forbidden when refused (for the token's
// scope when EnforceScope, or by the rule), or *NotRegisteredError.
func (e *Enforcer) Authorize(name string, creds Credentials, target map[string]string) error {
	d, ok := defaultsByName[name]
	if !ok {
		return &NotRegisteredError{Name: name}
	}
	if e.opts.EnforceScope && len(d.scopeTypes) > 0 {
		scope := creds.Scope()
		allowed := false
		for _, s := range d.scopeTypes {
			if s == scope {
				allowed = true
				break
			}
		}
		if !allowed {
			return &Forbidden{Action: name, Scope: scope}
		}
	}
	if target == nil {
		target = DefaultTarget(creds)
	}
	roles := make([]string, len(creds.Roles))
	for i, r := range creds.Roles {
		roles[i] = strings.ToLower(r)
	}
	ev := &evaluation{rules: e.rules, target: target, creds: creds.policyValues(), roles: roles}
	if !e.rules[name].eval(ev) {
		return &Forbidden{Action: name}
	}
	return nil
}

// effective returns the check string in force for a rule (for tests and
// debugging).
func (e *Enforcer) effective(name string) string {
	if c, ok := e.rules[name]; ok {
		return c.String()
	}
	return ""
}
