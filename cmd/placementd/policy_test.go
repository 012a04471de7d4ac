package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A policy_file that is no policy file is reported by path, line and
// reason, never by its content: /etc/shadow parses as YAML (each line a
// rule name), and a config file's "password: ..." as a rule whose check
// string does not parse. Before, every such line was quoted in the log.
func TestPolicyFileContentNeverLogged(t *testing.T) {
	const secret = "S3cretHash"
	for name, c := range map[string]struct{ content, want string }{
		"shadow": {"root:$6$salt$" + secret + "xyz:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n",
			"(name not shown: not a policy name) (FILE line 1) is not a Placement policy"},
		"config":      {"[DEFAULT]\npassword: " + secret + "\n", "FILE: line 1: expected a mapping of rule names to check strings"},
		"yaml config": {"password: " + secret + "\n", `FILE: line 1: rule "password": invalid check string: column 1: (...) is not a check`},
		"anchor":      {"a: *" + secret + "\n", "FILE: not valid YAML or JSON: yaml: unknown anchor (...) referenced"},
		"number":      {"pin: 1234" + "\nkey: [" + secret + ", 5]\n", "FILE: line 1: rule \"pin\": check string must be a string, not !!int"},
		"cycle":       {secret + ": rule:b\nb: rule:" + secret + "\n\"placement:traits:list\": rule:b\n", "cycle: (name not shown) -> b -> (name not shown)"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "policy.yaml")
			if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			_, err := newAuthorizer(&serveConfig{policyFile: path}, slog.New(slog.NewTextHandler(&logged, nil)))
			out := logged.String()
			if err != nil {
				out += "\nerror: " + err.Error()
			}
			if strings.Contains(out, secret) {
				t.Errorf("the file's content is in the log or the error:\n%s", out)
			}
			if want := strings.ReplaceAll(c.want, "FILE", path); !strings.Contains(out, want) {
				t.Errorf("got:\n%s\nwant it to contain %q", out, want)
			}
		})
	}
}
