package main

import (
	"os"
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
