package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every command and subcommand answers --help (and -h) with its usage and
// exit status 0, before touching any cluster or file.
func TestEveryCommandAnswersHelp(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = devnull, devnull
	defer func() { os.Stdout, os.Stderr = stdout, stderr }()
	for _, args := range [][]string{
		{"--help"}, {"help"},
		{"serve", "--help"},
		{"cluster", "--help"}, {"cluster", "help"}, {"cluster", "status", "--help"}, {"cluster", "remove", "--help"},
		{"snapshot", "--help"}, {"snapshot", "save", "--help"}, {"snapshot", "restore", "--help"}, {"snapshot", "inspect", "--help"},
		{"export", "--help"}, {"import", "--help"}, {"version", "--help"},
	} {
		for _, h := range []string{"--help", "-h"} {
			a := append([]string(nil), args...)
			if a[len(a)-1] == "--help" {
				a[len(a)-1] = h
			}
			if code := command(a); code != 0 {
				os.Stderr = stderr
				t.Errorf("placementd %v: exit status %d, want 0", a, code)
				os.Stderr = devnull
			}
		}
	}
}

// Help that is asked for goes to stdout (placementd --help | less), for
// the command and for every subcommand's flags; nothing to stderr.
func TestHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"serve", "--help"}, {"serve", "-h"},
		{"cluster", "status", "--help"}, {"snapshot", "save", "-h"}, {"export", "--help"}, {"import", "--help"}} {
		stdout, stderr := captureOutput(t, func() {
			if code := command(args); code != 0 {
				t.Errorf("placementd %v: exit status %d", args, code)
			}
		})
		if !strings.Contains(stdout, "Usage") && !strings.Contains(stdout, "usage") && !strings.Contains(stdout, "-addr") {
			t.Errorf("placementd %v: no usage on stdout: %q", args, stdout)
		}
		if stderr != "" {
			t.Errorf("placementd %v: wrote to stderr: %q", args, stderr)
		}
	}
}

// captureOutput runs f with os.Stdout and os.Stderr going to files and
// returns what each received.
func captureOutput(t *testing.T, f func()) (stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	errf, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	saved, savedErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = out, errf
	func() {
		defer func() { os.Stdout, os.Stderr = saved, savedErr }()
		f()
	}()
	out.Close()
	errf.Close()
	o, _ := os.ReadFile(out.Name())
	e, _ := os.ReadFile(errf.Name())
	return string(o), string(e)
}
