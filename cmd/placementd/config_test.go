package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "placementd.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A setting comes from the command line, else the environment, else the
// file, else the default; lists in the file are joined with commas.
func TestConfigPrecedence(t *testing.T) {
	path := writeConfig(t, `
http-addr: 10.0.0.1:8778
raft-addr: 10.0.0.1:8779
data-dir: /from/file
join: [a:8778, b:8778]
non-voter: true
snapshot-threshold: 100
`)
	t.Setenv("PLACEMENTD_RAFT_ADDR", "10.0.0.2:8779")
	t.Setenv("PLACEMENTD_DATA_DIR", "/from/env")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c := serveFlags(fs)
	if err := configure(fs, []string{"--config", path, "--data-dir", "/from/flag"}, true); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, got, want string }{
		{"http-addr (file)", c.httpAddr, "10.0.0.1:8778"},
		{"raft-addr (env over file)", c.raftAddr, "10.0.0.2:8779"},
		{"data-dir (flag over env)", c.dataDir, "/from/flag"},
		{"join (list)", c.cluster.join, "a:8778,b:8778"},
		{"log-format (default)", c.logFormat, "text"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if !c.cluster.nonVoter || c.cluster.snapshotThreshold != 100 {
		t.Errorf("non-voter %v, snapshot-threshold %d", c.cluster.nonVoter, c.cluster.snapshotThreshold)
	}
}

// PLACEMENTD_CONFIG names the file when --config is not given.
func TestConfigFromEnvironment(t *testing.T) {
	t.Setenv("PLACEMENTD_CONFIG", writeConfig(t, "log-format: json\n"))
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c := serveFlags(fs)
	if err := configure(fs, nil, true); err != nil {
		t.Fatal(err)
	}
	if c.logFormat != "json" {
		t.Fatalf("log-format %q", c.logFormat)
	}
}

// serve refuses a file with a setting it does not know (a typo); the
// operator commands skip the serve settings they do not have.
func TestConfigUnknownSettings(t *testing.T) {
	path := writeConfig(t, "cluster-secret: s3cret\nhttp-adr: x\n")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	serveFlags(fs)
	err := configure(fs, []string{"--config=" + path}, true)
	if err == nil || !strings.Contains(err.Error(), `"http-adr"`) {
		t.Fatalf("serve accepted an unknown setting: %v", err)
	}

	ofs := flag.NewFlagSet("cluster status", flag.ContinueOnError)
	var o operatorFlags
	o.register(ofs)
	if _, err := parseCommand(ofs, []string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	if o.secret != "s3cret" {
		t.Fatalf("operator command did not read the secret from the file: %q", o.secret)
	}

	for _, bad := range []string{"http-addr: {a: 1}\n", "http-addr: [", "join: [{a: 1}]\n"} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		serveFlags(fs)
		if err := configure(fs, []string{"--config", writeConfig(t, bad)}, true); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// serve --help lists every flag once, under its group, with its
// environment variable.
func TestServeHelpListsEveryFlag(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	serveFlags(fs)
	fs.String(configFlag, "", "config")
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	serveUsage(fs)
	out := buf.String()
	fs.VisitAll(func(f *flag.Flag) {
		if n := strings.Count(out, "  --"+f.Name+" ") + strings.Count(out, "  --"+f.Name+"\n"); n != 1 {
			t.Errorf("--%s listed %d times", f.Name, n)
		}
		env := "PLACEMENTD_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if !strings.Contains(out, env) {
			t.Errorf("%s not shown", env)
		}
	})
}

// Upstream's allocation-candidates options are serve flags; bad values
// stop the server before it opens anything.
func TestCandidateFlags(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c := serveFlags(fs)
	if c.candidates != (candidateFlags{max: 10000, strategy: "depth-first", memoryMB: 128}) || c.requestTimeout != 30*time.Second {
		t.Fatalf("default candidate flags: %+v, request timeout %s", c.candidates, c.requestTimeout)
	}
	if err := configure(fs, []string{"--max-allocation-candidates", "1000", "--allocation-candidates-generation-strategy", "breadth-first", "--randomize-allocation-candidates",
		"--allocation-candidates-memory-mb", "-1", "--request-timeout", "5s"}, true); err != nil {
		t.Fatal(err)
	}
	if c.candidates != (candidateFlags{randomize: true, max: 1000, strategy: "breadth-first", memoryMB: -1}) || c.requestTimeout != 5*time.Second {
		t.Fatalf("candidate flags: %+v, request timeout %s", c.candidates, c.requestTimeout)
	}
	refusedAtStart(t, []startRefusal{
		{[]string{"--allocation-candidates-generation-strategy", "random"}, "--allocation-candidates-generation-strategy"},
		{[]string{"--max-allocation-candidates", "0"}, "--max-allocation-candidates"},
		{[]string{"--allocation-candidates-memory-mb", "0"}, "--allocation-candidates-memory-mb"},
		{[]string{"--request-timeout", "0s"}, "--request-timeout"},
	})
}

// startRefusal: serve given args must fail with an error saying want.
type startRefusal struct {
	args []string
	want string
}

// refusedAtStart runs serve with each case's args and checks its error,
// and that no refused start wrote to the data dir.
func refusedAtStart(t *testing.T, cases []startRefusal) {
	t.Helper()
	dir := t.TempDir()
	for _, tc := range cases {
		err := serve(append([]string{"--data-dir", dir}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused start wrote to the data dir: %v", entries)
	}
}

// The Raft timing comes from the multiplier, each timeout may be set on
// its own (flag or environment), and timeouts that contradict each other
// stop the server before it opens anything.
func TestRaftTimingFlags(t *testing.T) {
	t.Setenv("PLACEMENTD_RAFT_COMMIT_TIMEOUT", "20ms")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c := serveFlags(fs)
	if err := configure(fs, []string{"--raft-timing-multiplier", "0.5", "--raft-election-timeout", "800ms"}, true); err != nil {
		t.Fatal(err)
	}
	got, err := c.cluster.raftTiming()
	if err != nil {
		t.Fatal(err)
	}
	want := cluster.Timing{Heartbeat: 500 * time.Millisecond, Election: 800 * time.Millisecond, LeaderLease: 250 * time.Millisecond, Commit: 20 * time.Millisecond}
	if got != want {
		t.Fatalf("timing %+v, want %+v", got, want)
	}
	refusedAtStart(t, []startRefusal{
		{[]string{"--raft-timing-multiplier", "0"}, "--raft-timing-multiplier"},
		{[]string{"--raft-leader-lease-timeout", "2s"}, "leader lease timeout 2s is longer than the heartbeat timeout 1s"},
		{[]string{"--raft-heartbeat-timeout", "2s"}, "election timeout 1s is shorter than the heartbeat timeout 2s"},
		{[]string{"--raft-commit-timeout", "1s"}, "commit timeout 1s is not below the heartbeat timeout"},
		{[]string{"--raft-heartbeat-timeout", "2ms"}, "heartbeat timeout 2ms is below raft's minimum"},
	})
}
