package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/ini.v1"
)

// --config-file FILE (PLACEMENTD_CONFIG_FILE) reads upstream Placement's
// placement.conf, an oslo.config INI file, as it is: each option that has
// a meaning for placementd sets the serve flag that does the same, the
// others are logged once as ignored, and sections placementd does not
// know are no error, as with oslo.config. A setting comes from, in order
// of precedence: the command line, the environment, the YAML --config
// file, placement.conf, the flag's default.
//
// Where upstream's default differs from the flag's, a placement.conf
// brings upstream's: [api] auth_strategy is keystone unless the file says
// otherwise, [oslo_policy] looks for policy.yaml and policy.d/ beside
// the file, where oslo.policy finds them, and enforces scope and the new
// defaults, as oslo.policy does since 2024.2. A [placementd] section sets
// placementd's own flags (cluster, addresses), over the options above.

const upstreamConfigFlag = "config-file"

// ownSection is placementd's own section of placement.conf: keys named as
// the serve flags (dashes or underscores), for deployments whose tools
// write placement.conf only (Kolla-Ansible merges operators' sections into
// it, per host too).
const ownSection = "placementd"

// upstreamConfig is the value of --config-file: the path, and what reading
// it found to report once the logger exists.
type upstreamConfig struct {
	path string
	// ignored maps a section to its options that placementd does not use;
	// unknownSections are sections it does not know at all.
	ignored         map[string][]string
	unknownSections []string
}

func (u *upstreamConfig) String() string     { return u.path }
func (u *upstreamConfig) Set(v string) error { u.path = v; return nil }

// upstreamOption turns one placement.conf option into a serve flag value;
// dir is the file's directory, for relative paths.
type upstreamOption struct {
	flag    string
	convert func(value, dir string) (string, error)
	// skipEmpty: an empty result leaves the flag alone.
	skipEmpty bool
}

func asIs(v, _ string) (string, error) { return v, nil }

// oslo.config's booleans.
func asBool(v, _ string) (string, error) {
	switch strings.ToLower(v) {
	case "true", "1", "on", "yes":
		return "true", nil
	case "false", "0", "off", "no":
		return "false", nil
	}
	return "", fmt.Errorf("%q is not a boolean", v)
}

func asInt(v, _ string) (string, error) {
	if _, err := strconv.Atoi(v); err != nil {
		return "", fmt.Errorf("%q is not an integer", v)
	}
	return v, nil
}

// asSeconds turns an integer of seconds into a flag duration.
func asSeconds(v, _ string) (string, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return "", fmt.Errorf("%q is not a number of seconds", v)
	}
	return strconv.Itoa(n) + "s", nil
}

// asList is oslo.config's ListOpt: comma-separated items.
func asList(v, _ string) (string, error) { return strings.Join(splitList(v), ","), nil }

// asPath resolves a relative path against the file's directory, as
// oslo.config's find_file looks in the directories of its config files.
func asPath(v, dir string) (string, error) {
	if v == "" || filepath.IsAbs(v) {
		return v, nil
	}
	return filepath.Join(dir, v), nil
}

func asPaths(v, dir string) (string, error) {
	items := splitList(v)
	for i, p := range items {
		items[i], _ = asPath(p, dir)
	}
	return strings.Join(items, ","), nil
}

// ifTrue sets the flag to value when the boolean option is true ([DEFAULT]
// debug, use_json), and leaves it alone when false.
func ifTrue(value string) func(string, string) (string, error) {
	return func(v, dir string) (string, error) {
		b, err := asBool(v, dir)
		if err != nil || b == "false" {
			return "", err
		}
		return value, nil
	}
}

// upstreamOptions are the options placementd honours, by section.
var upstreamOptions = map[string]map[string]upstreamOption{
	"DEFAULT": {
		"debug":    {"log-level", ifTrue("debug"), true},
		"use_json": {"log-format", ifTrue("json"), true},
	},
	"api": {
		"auth_strategy": {"auth-strategy", asIs, false},
	},
	"placement": {
		"randomize_allocation_candidates":           {"randomize-allocation-candidates", asBool, false},
		"max_allocation_candidates":                 {"max-allocation-candidates", asInt, false},
		"allocation_candidates_generation_strategy": {"allocation-candidates-generation-strategy", asIs, false},
		"incomplete_consumer_project_id":            {"incomplete-consumer-project-id", asIs, false},
		"incomplete_consumer_user_id":               {"incomplete-consumer-user-id", asIs, false},
	},
	"keystone_authtoken": {
		"auth_url":             {"keystone-auth-url", asIs, false},
		"username":             {"keystone-username", asIs, false},
		"password":             {"keystone-password", asIs, false},
		"project_name":         {"keystone-project-name", asIs, false},
		"user_domain_name":     {"keystone-user-domain-name", asIs, false},
		"user_domain_id":       {"keystone-user-domain-id", asIs, false},
		"project_domain_name":  {"keystone-project-domain-name", asIs, false},
		"project_domain_id":    {"keystone-project-domain-id", asIs, false},
		"www_authenticate_uri": {"keystone-www-authenticate-uri", asIs, false},
		"auth_uri":             {"keystone-www-authenticate-uri", asIs, false}, // its deprecated name
		"token_cache_time":     {"keystone-token-cache-time", asSeconds, false},
		"service_token_roles":  {"keystone-service-token-roles", asList, false},
		"service_type":         {"keystone-service-type", asIs, false},
		"http_connect_timeout": {"keystone-timeout", asSeconds, false},
		"auth_type":            {"", checkAuthType, false},

		// Where tokens are validated, and how service tokens count.
		"service_token_roles_required": {"keystone-service-token-roles-required", asBool, false},
		"interface":                    {"keystone-interface", asIs, false},
		"region_name":                  {"keystone-region-name", asIs, false},
		// Paths as keystoneauth opens them: from the working directory,
		// not the file's.
		"cafile":   {"keystone-cafile", asIs, false},
		"certfile": {"keystone-certfile", asIs, false},
		"keyfile":  {"keystone-keyfile", asIs, false},
		"insecure": {"keystone-insecure", asBool, false},
	},
	"oslo_policy": {
		"policy_file":          {"policy-file", asPath, false},
		"policy_dirs":          {"policy-dirs", asPaths, false},
		"enforce_new_defaults": {"policy-enforce-new-defaults", asBool, false},
		"enforce_scope":        {"policy-enforce-scope", asBool, false},
	},
	"cors": {
		"allowed_origin": {"cors-allowed-origin", asList, false},
		"allow_headers":  {"cors-allow-headers", asList, false},
	},
}

// checkAuthType: placementd authenticates its service user with a
// password, keystoneauth's password plugins; another plugin would not
// work, so it stops the start rather than being ignored.
func checkAuthType(v, _ string) (string, error) {
	switch v {
	case "password", "v3password":
		return "", nil
	}
	return "", fmt.Errorf("auth_type %q is not supported: placementd's service user logs in with a password (auth_type = password)", v)
}

// upstreamDefaults are upstream's defaults where they differ from the
// flags': applied when the file does not set the option. enforce_* are
// oslo.policy's since 2024.2 (4.4.0), the release whose policy placementd
// implements (docs/api-compat.md).
var upstreamDefaults = map[string]map[string]string{
	"api":         {"auth_strategy": "keystone"},
	"oslo_policy": {"policy_file": "policy.yaml", "policy_dirs": "policy.d", "enforce_scope": "true", "enforce_new_defaults": "true"},
}

// apply reads the file and sets the flags of fs it maps to.
func (u *upstreamConfig) apply(fs *flag.FlagSet) error {
	f, err := ini.LoadSources(ini.LoadOptions{
		// oslo.config's syntax: "=" or ":", indented continuation lines,
		// no inline comments and no backslash continuation.
		KeyValueDelimiters:         "=:",
		AllowPythonMultilineValues: true,
		IgnoreInlineComment:        true,
		IgnoreContinuation:         true,
	}, u.path)
	if err != nil {
		return fmt.Errorf("--config-file: %w", err)
	}
	dir := filepath.Dir(u.path)
	u.ignored = map[string][]string{}
	set := map[string]bool{} // "section.option" the file sets
	for _, sec := range f.Sections() {
		name := sec.Name()
		if name == ownSection {
			continue // last, below
		}
		known, ok := upstreamOptions[name]
		if !ok {
			if len(sec.Keys()) > 0 || name != ini.DefaultSection {
				u.unknownSections = append(u.unknownSections, name)
			}
			continue
		}
		for _, key := range sec.Keys() {
			opt := strings.ReplaceAll(key.Name(), "-", "_")
			o, ok := known[opt]
			switch {
			case !ok:
				u.ignored[name] = append(u.ignored[name], opt)
				continue
			case opt == "auth_uri" && sec.HasKey("www_authenticate_uri"):
				continue // the current name wins over the deprecated one
			}
			set[name+"."+opt] = true
			if err := u.setFlag(fs, name, opt, o, key.Value(), dir); err != nil {
				return err
			}
		}
	}
	for name, defaults := range upstreamDefaults {
		for opt, v := range defaults {
			if set[name+"."+opt] {
				continue
			}
			if strings.HasPrefix(opt, "policy_") {
				// Only if it is there, as oslo.policy does.
				if _, err := os.Stat(filepath.Join(dir, v)); err != nil {
					continue
				}
			}
			if err := u.setFlag(fs, name, opt, upstreamOptions[name][opt], v, dir); err != nil {
				return err
			}
		}
	}
	// [placementd]: any serve flag, by name, over the options above.
	for _, key := range f.Section(ownSection).Keys() {
		name := strings.ReplaceAll(key.Name(), "_", "-")
		fl := fs.Lookup(name)
		if fl == nil || name == configFlag || name == upstreamConfigFlag {
			return fmt.Errorf("%s: [%s] %s: not a flag of placementd serve", u.path, ownSection, key.Name())
		}
		if err := fl.Value.Set(key.Value()); err != nil {
			return fmt.Errorf("%s: [%s] %s: %v", u.path, ownSection, key.Name(), err)
		}
	}
	return nil
}

func (u *upstreamConfig) setFlag(fs *flag.FlagSet, section, opt string, o upstreamOption, raw, dir string) error {
	v, err := o.convert(raw, dir)
	if err != nil {
		return fmt.Errorf("%s: [%s] %s: %v", u.path, section, opt, err)
	}
	if o.flag == "" || o.skipEmpty && v == "" {
		return nil // checked only, or a [DEFAULT] switch that is off
	}
	if err := fs.Lookup(o.flag).Value.Set(v); err != nil {
		return fmt.Errorf("%s: [%s] %s: %v", u.path, section, opt, err)
	}
	return nil
}

// logIgnored reports, once at start, what of the file placementd does not
// use (names only: values may be secrets).
func (u *upstreamConfig) logIgnored(log *slog.Logger) {
	if u.path == "" {
		return
	}
	sections := make([]string, 0, len(u.ignored))
	for s := range u.ignored {
		sections = append(sections, s)
	}
	sort.Strings(sections)
	for _, s := range sections {
		log.Info("placement.conf: options with no meaning for placementd, ignored", "file", u.path, "section", s, "options", u.ignored[s])
	}
	var other []string
	for _, s := range u.unknownSections {
		switch s {
		case "placement_database", "database", "api_database":
			log.Info("placement.conf: ["+s+"] ignored: placementd keeps its state in its Raft log, not in SQL; "+
				"to bring the data of that database over, run `placementd import --from URL` against the running upstream Placement (docs/migration.md)",
				"file", u.path)
		default:
			other = append(other, s)
		}
	}
	if len(other) > 0 {
		log.Info("placement.conf: sections with no meaning for placementd, ignored", "file", u.path, "sections", other)
	}
}
