package fsm

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/placementd/placementd/fsm/state"
)

// persistedRoots are the types log entries and snapshots are encoded
// from: every command in the table (commands.go) and the state image.
func persistedRoots() []reflect.Type {
	var out []reflect.Type
	for _, kind := range CommandKinds() {
		out = append(out, reflect.TypeOf(NewCommand(kind)).Elem())
	}
	return append(out, reflect.TypeOf(state.Image{}))
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// encodesItself reports whether JSON of t is t's own (time.Time): its
// fields are not the format's field names.
func encodesItself(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)
}

// persistedStructs walks t and returns every struct type whose fields
// are written into entries or snapshots, by name, each with the path it
// was first reached by.
func persistedStructs(t reflect.Type, path string, seen map[reflect.Type]string) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		persistedStructs(t.Elem(), path, seen)
		return
	case reflect.Struct:
	default:
		return
	}
	if _, ok := seen[t]; ok || encodesItself(t) {
		return
	}
	seen[t] = path
	for f := range t.Fields() {
		persistedStructs(f.Type, path+"."+f.Name, seen)
	}
}

// fieldNameProblems lists the fields of t whose name in the format is not
// written down: an exported field without a json tag naming it is
// encoded under its Go name, which a rename would silently change.
func fieldNameProblems(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		tag, tagged := f.Tag.Lookup("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case f.Anonymous && f.Type.Kind() == reflect.Struct && !tagged:
			// Embedded: its fields are written in place, each checked
			// as part of the embedded type.
		case !f.IsExported():
			out = append(out, fmt.Sprintf("%s.%s is unexported: encoding/json leaves it out of the entry or snapshot", t, f.Name))
		case name == "" || name == "-":
			out = append(out, fmt.Sprintf("%s.%s has no json tag naming it (write the name it is stored under: `json:\"%s\"`)", t, f.Name, f.Name))
		}
	}
	return out
}

// Every field of every command and of the state image is stored under a
// name written in its json tag, so that renaming a Go field cannot change
// what is on disk. A new field fails here until it is given its name (and
// TestGoldenFieldsCovered until a golden entry or snapshot holds it).
func TestPersistedFieldsNameThemselves(t *testing.T) {
	seen := map[reflect.Type]string{}
	for _, root := range persistedRoots() {
		persistedStructs(root, root.Name(), seen)
	}
	var problems []string
	for typ := range seen {
		problems = append(problems, fieldNameProblems(typ)...)
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
	if len(seen) < 20 {
		t.Fatalf("only %d persisted struct types found: the walk is broken", len(seen))
	}
}

func TestFieldNameProblemsFindsUntaggedFields(t *testing.T) {
	type inner struct {
		A int `json:"A"`
	}
	type sample struct {
		inner
		Tagged    int `json:"Tagged,omitempty"`
		Untagged  int
		OnlyOpts  int `json:",omitempty"`
		Skipped   int `json:"-"`
		unexposed int
	}
	_ = sample{}.unexposed
	got := fieldNameProblems(reflect.TypeOf(sample{}))
	if len(got) != 4 {
		t.Fatalf("found %d problems, want Untagged, OnlyOpts, Skipped, unexposed:\n%s", len(got), strings.Join(got, "\n"))
	}
}
