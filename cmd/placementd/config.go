package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The configuration file, given with --config FILE (or PLACEMENTD_CONFIG),
// is YAML: a mapping from flag names, without the dashes in front, to
// values. A list is joined with commas (for --join and the CORS flags).
//
//	http-addr: 0.0.0.0:8778
//	data-dir: /var/lib/placementd
//	join: [10.0.0.1:8778, 10.0.0.2:8778]
//	log-format: json
//
// A setting comes from, in order of precedence: the command line, the
// PLACEMENTD_<NAME> environment variable, the file, the flag's default.

const configFlag = "config"

// configure sets fs from the configuration file and the environment, then
// parses args.
func configure(fs *flag.FlagSet, args []string, strict bool) error {
	if err := presetFlags(fs, args, strict); err != nil {
		return err
	}
	return fs.Parse(args)
}

// helpToStdout sends fs's usage to stdout when args ask for it
// (`placementd serve --help | less`); after a mistake in the flags it
// stays on stderr with the error.
func helpToStdout(fs *flag.FlagSet, args []string) {
	for _, a := range args {
		if a == "--" {
			return
		}
		if a == "-h" || a == "-help" || a == "--help" || a == "--h" {
			fs.SetOutput(os.Stdout)
			return
		}
	}
}

// presetFlags sets fs from the configuration file named in args (or by
// PLACEMENTD_CONFIG), then from the environment; parsing args comes next.
// With strict, a key of the file that names no flag of fs is an error (a
// typo must not go unnoticed in `serve`); operator commands read the same
// file for the few flags they share with serve (--cluster-secret).
func presetFlags(fs *flag.FlagSet, args []string, strict bool) error {
	helpToStdout(fs, args)
	if fs.Lookup(configFlag) == nil {
		fs.String(configFlag, "", "YAML file of settings named as the flags (see docs/operators-guide.md)")
	}
	// placement.conf (serve only) first: the YAML file and the
	// environment override it.
	if u, ok := upstreamConfigOf(fs); ok {
		path, given := configPath(args, upstreamConfigFlag)
		if !given {
			path = os.Getenv("PLACEMENTD_CONFIG_FILE")
		}
		if path != "" {
			u.Set(path)
			if err := u.apply(fs); err != nil {
				return err
			}
		}
	}
	path, ok := configPath(args, configFlag)
	if !ok {
		path = os.Getenv("PLACEMENTD_CONFIG")
	}
	if path != "" {
		if err := applyConfigFile(fs, path, strict); err != nil {
			return err
		}
	}
	return envDefaults(fs)
}

func upstreamConfigOf(fs *flag.FlagSet) (*upstreamConfig, bool) {
	f := fs.Lookup(upstreamConfigFlag)
	if f == nil {
		return nil, false
	}
	u, ok := f.Value.(*upstreamConfig)
	return u, ok
}

// configPath finds a file flag (--config, --config-file) on the command
// line before the flags are parsed, since the file's values must be set
// first.
func configPath(args []string, flagName string) (string, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != flagName {
			continue
		}
		if hasValue {
			return value, true
		}
		if i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

func applyConfigFile(fs *flag.FlagSet, path string, strict bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	values, err := parseConfig(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, name := range sortedKeys(values) {
		f := fs.Lookup(name)
		if f == nil || name == configFlag || name == upstreamConfigFlag {
			if strict {
				return fmt.Errorf("%s: unknown setting %q (settings are named as the flags of placementd serve)", path, name)
			}
			continue
		}
		if err := f.Value.Set(values[name]); err != nil {
			return fmt.Errorf("%s: %s: %v", path, name, err)
		}
	}
	return nil
}

// parseConfig reads the YAML mapping into flag values.
func parseConfig(data []byte) (map[string]string, error) {
	var raw map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range raw {
		k = strings.TrimLeft(k, "-")
		switch v := v.(type) {
		case nil:
			out[k] = ""
		case []any:
			items := make([]string, len(v))
			for i, item := range v {
				if _, nested := item.(map[string]any); nested {
					return nil, fmt.Errorf("%s: a list of plain values is expected", k)
				}
				items[i] = fmt.Sprint(item)
			}
			out[k] = strings.Join(items, ",")
		case map[string]any:
			return nil, fmt.Errorf("%s: a plain value or a list is expected, not a mapping", k)
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// flagGroups orders `placementd serve --help`: each flag goes under the
// first group with a matching name or prefix (a trailing "-"); flags no
// group names are listed last, so a new flag is never hidden.
var flagGroups = []struct {
	title string
	names []string
}{
	{"Placement API", []string{"http-", "cors-", "incomplete-consumer-", "max-", "randomize-", "allocation-candidates-", "request-timeout", "admission-wait"}},
	{"Authentication and policy", []string{"auth-", "keystone-", "policy-", "tls-"}},
	{"Cluster (Raft)", []string{"node-id", "data-dir", "raft-", "join", "bootstrap-expect", "cluster-secret", "non-voter", "snapshot-", "trailing-logs", "leave-on-shutdown", "shutdown-timeout", "region", "zone", "leader-regions"}},
	{"Logs, metrics and configuration", []string{"log-", "metrics-addr", "metrics-token", "pprof-addr", "config", "config-file"}},
	{"Runtime", []string{"gc-"}},
}

func flagGroup(name string) int {
	for i, g := range flagGroups {
		for _, n := range g.names {
			if name == n || strings.HasSuffix(n, "-") && strings.HasPrefix(name, n) {
				return i
			}
		}
	}
	return len(flagGroups)
}

// flagSection is one group of flags (flagGroups) as help shows it.
type flagSection struct {
	title string
	flags []*flag.Flag
}

// flagSections are fs's flags by group, in flagGroups' order and then
// "Other", leaving out empty groups: what --help and the guide's table
// (flagTable) list.
func flagSections(fs *flag.FlagSet) []flagSection {
	groups := make([][]*flag.Flag, len(flagGroups)+1)
	fs.VisitAll(func(f *flag.Flag) {
		g := flagGroup(f.Name)
		groups[g] = append(groups[g], f)
	})
	var out []flagSection
	for i, flags := range groups {
		if len(flags) == 0 {
			continue
		}
		title := "Other"
		if i < len(flagGroups) {
			title = flagGroups[i].title
		}
		out = append(out, flagSection{title, flags})
	}
	return out
}

// printFlags writes fs's flags by group, each with its environment
// variable and default.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	for _, sec := range flagSections(fs) {
		fmt.Fprintf(w, "\n%s:\n", sec.title)
		for _, f := range sec.flags {
			kind, usage := flag.UnquoteUsage(f)
			head := "  --" + f.Name
			if kind != "" {
				head += " " + kind
			}
			env := "PLACEMENTD_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
			fmt.Fprintf(w, "%s\n        %s\n        [%s", head, usage, env)
			if f.DefValue != "" && f.DefValue != "false" {
				fmt.Fprintf(w, "; default %s", f.DefValue)
			}
			fmt.Fprintln(w, "]")
		}
	}
}

// serveUsage is `placementd serve --help`.
func serveUsage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprint(w, `Usage: placementd serve [flags]

Runs one placementd node: the Placement API, the cluster's operator API
under /_cluster/ (it needs the cluster secret), /metrics (the metrics
token or the cluster secret; loopback callers on a node with neither),
/healthz and /readyz, all on --http-addr, and Raft on --raft-addr. A
fresh --data-dir without --join starts a new single-node cluster.

Every flag can also be set with the environment variable shown, or in the
YAML file given with --config (keys named as the flags); many can also be
read from upstream Placement's placement.conf given with --config-file. A
flag on the command line wins over the environment, which wins over the
YAML file, which wins over placement.conf.
`)
	printFlags(w, fs)
}
