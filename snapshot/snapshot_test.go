package snapshot

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/placementd/placementd/fsm/state"
)

func TestWriteReadRoundTrip(t *testing.T) {
	s := state.New()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	(&state.CreateResourceClass{Name: "CUSTOM_A"}).Apply(s, state.Meta{Time: now})
	(&state.CreateTrait{Name: "CUSTOM_T"}).Apply(s, state.Meta{Time: now})
	img := s.Image()
	var buf bytes.Buffer
	if err := Write(&buf, img); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "placementd-snapshot v1\n") {
		t.Fatalf("header: %q", buf.String()[:30])
	}
	got, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if Digest(got) != Digest(img) {
		t.Fatal("digest changed through write and read")
	}
	loaded, err := state.Load(got)
	if err != nil {
		t.Fatal(err)
	}
	if Digest(loaded.Image()) != Digest(img) {
		t.Fatal("loaded state differs")
	}
}

func TestReadRefusesNewerOrForeignFormats(t *testing.T) {
	for _, in := range []string{"placementd-snapshot v2\n", "something else\n", ""} {
		if _, err := Read(strings.NewReader(in)); err == nil {
			t.Errorf("read %q without error", in)
		}
	}
}

func TestDigestDiffersWithState(t *testing.T) {
	a, b := state.New(), state.New()
	(&state.CreateTrait{Name: "CUSTOM_T"}).Apply(b, state.Meta{})
	if Digest(a.Image()) == Digest(b.Image()) {
		t.Fatal("different states share a digest")
	}
}

// The digest is the state's alone: the same state at another log index
// (an import verified on a cluster that has since applied a no-op, a
// status taken later) has the same digest.
func TestDigestLeavesOutTheLogIndex(t *testing.T) {
	s := state.New()
	(&state.CreateTrait{Name: "CUSTOM_T"}).Apply(s, state.Meta{})
	a, b := s.Image(), s.Image()
	a.LastIndex, b.LastIndex = 7, 4242
	if Digest(a) != Digest(b) {
		t.Fatal("the digest changed with the log index alone")
	}
	if a.LastIndex != 7 {
		t.Fatal("Digest changed the image")
	}
}
