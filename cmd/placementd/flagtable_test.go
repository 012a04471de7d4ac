package main

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var updateGuide = flag.Bool("update-guide", false, "rewrite docs/operators-guide.md's flag table from the serve flags")

const (
	guidePath       = "../../docs/operators-guide.md"
	flagTableBegin  = "<!-- serve-flags:begin -->\n"
	flagTableFinish = "<!-- serve-flags:end -->\n"
)

// The operator's guide's flag table is the serve flags' (flagTable): a
// flag added, removed or described anew without the guide fails here.
func TestGuideFlagTable(t *testing.T) {
	fs := flag.NewFlagSet("placementd serve", flag.ContinueOnError)
	serveFlags(fs)
	if err := presetFlags(fs, nil, true); err != nil { // adds --config, as serve does
		t.Fatal(err)
	}
	want := []byte(flagTable(fs))
	guide, err := os.ReadFile(guidePath)
	if err != nil {
		t.Fatal(err)
	}
	begin := bytes.Index(guide, []byte(flagTableBegin))
	end := bytes.Index(guide, []byte(flagTableFinish))
	if begin < 0 || end < begin {
		t.Fatalf("%s has no %q ... %q block", guidePath, flagTableBegin, flagTableFinish)
	}
	got := guide[begin+len(flagTableBegin) : end]
	if bytes.Equal(got, want) {
		return
	}
	if *updateGuide {
		updated := append(append(append([]byte{}, guide[:begin+len(flagTableBegin)]...), want...), guide[end:]...)
		if err := os.WriteFile(guidePath, updated, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the flag table of %s", guidePath)
		return
	}
	t.Errorf("the flag table of %s differs from the serve flags: go test ./cmd/placementd -run TestGuideFlagTable -update-guide rewrites it\n--- guide\n%s\n--- flags\n%s", guidePath, got, want)
}
