package fsm

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/internal/statecheck"
)

// Golden files: log entries and snapshots as this and earlier builds
// wrote them, kept in testdata/golden forever and replayed by every test
// run. A change that makes an old entry decode or apply differently, or
// an old snapshot load differently, fails here; such a change needs a new
// format version (and the old behaviour kept for old versions), not new
// golden files.
//
// The files are written once, by
//
//	go test ./fsm -run TestWriteGolden -update-golden
//
// which writes only the files that do not exist yet (a new scenario in
// golden_cases_test.go, a new snapshot version) and never rewrites one.

var updateGolden = flag.Bool("update-golden", false, "write the golden files that do not exist yet (existing ones are never rewritten)")

const goldenDir = "testdata/golden"

// goldenLog is a golden log file: a sequence of log entries exactly as
// they were written, each with what applying it to the state the entries
// before it made gave.
type goldenLog struct {
	About string       `json:"about"`
	Steps []goldenStep `json:"steps"`
}

type goldenStep struct {
	Index uint64 `json:"index"`
	// Entry is the log entry's bytes (it is JSON itself).
	Entry stdjson.RawMessage `json:"entry"`
	// Results are the commands' results in order: one, or one per
	// command of a batch.
	Results []goldenResult `json:"results"`
	// Digest is the state's digest after the entry.
	Digest string `json:"digest"`
}

type goldenResult struct {
	// Value is the JSON of the command's result value (null for none).
	Value stdjson.RawMessage `json:"value,omitempty"`
	Error *goldenError       `json:"error,omitempty"`
}

type goldenError struct {
	Kind   state.Kind `json:"kind"`
	Code   string     `json:"code"`
	Detail string     `json:"detail"`
}

// goldenSnapshot is the sidecar of a golden snapshot file: what reading
// the file must give.
type goldenSnapshot struct {
	About     string `json:"about"`
	Digest    string `json:"digest"`
	LastIndex uint64 `json:"last_index"`
	// ClusterSection is the payload of the cluster's section, for a Raft
	// snapshot that has one.
	ClusterSection string `json:"cluster_section,omitempty"`
}

func resultsOf(t testing.TB, resp any) []goldenResult {
	t.Helper()
	var out []goldenResult
	for _, r := range Results(resp) {
		var gr goldenResult
		if r.Err != nil {
			var se *state.Error
			if !errors.As(r.Err, &se) {
				t.Fatalf("a command failed with %T %v, not a *state.Error", r.Err, r.Err)
			}
			gr.Error = &goldenError{Kind: se.Kind, Code: se.Code, Detail: se.Detail}
		} else if r.Value != nil {
			b, err := stdjson.Marshal(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			gr.Value = b
		}
		out = append(out, gr)
	}
	return out
}

// writeOnce writes a golden file unless it exists.
func writeOnce(t *testing.T, name string, data []byte) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if _, err := os.Stat(path); err == nil {
		t.Logf("kept %s (golden files are never rewritten)", path)
		return
	}
	if err := os.MkdirAll(goldenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

// goldenEntries encodes a scenario's commands as log entries: each alone,
// or in batches of up to three (a lone last one goes alone).
func goldenEntries(t *testing.T, cmds []state.Command, batched bool) [][]byte {
	at := goldenStart
	var out [][]byte
	var group [][]byte
	flush := func() {
		switch len(group) {
		case 0:
		case 1:
			out = append(out, group[0])
		default:
			out = append(out, EncodeBatch(group))
		}
		group = nil
	}
	for _, cmd := range cmds {
		data, err := Encode(cmd, at)
		if err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Second + time.Nanosecond)
		group = append(group, data)
		if !batched || len(group) == 3 {
			flush()
		}
	}
	flush()
	return out
}

// encodeGoldenLog applies the entries to a new FSM and records each
// with its results and the digest after it, one step per line.
func encodeGoldenLog(t *testing.T, about string, entries [][]byte) []byte {
	f := New()
	var buf bytes.Buffer
	aboutJSON, _ := stdjson.Marshal(about)
	fmt.Fprintf(&buf, "{\"about\": %s,\n\"steps\": [\n", aboutJSON)
	for i, data := range entries {
		index := uint64(i + 1)
		step := goldenStep{Index: index, Entry: data,
			Results: resultsOf(t, f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: data}))}
		step.Digest, _ = f.Digest()
		line, err := stdjson.Marshal(step)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			buf.WriteString(",\n")
		}
		buf.Write(line)
	}
	buf.WriteString("\n]}\n")
	// The entries must be in the file byte for byte as written.
	var back goldenLog
	if err := stdjson.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for i, s := range back.Steps {
		if !bytes.Equal(s.Entry, entries[i]) {
			t.Fatalf("entry %d changed on its way into the file:\n%s\n%s", i+1, entries[i], s.Entry)
		}
	}
	return buf.Bytes()
}

func TestWriteGolden(t *testing.T) {
	if !*updateGolden {
		t.Skip("go test ./fsm -run TestWriteGolden -update-golden writes the golden files that do not exist yet")
	}
	for _, sc := range goldenScenarios() {
		writeOnce(t, sc.name+"-singles.json", encodeGoldenLog(t, sc.about+"; each command its own entry", goldenEntries(t, sc.cmds, false)))
		writeOnce(t, sc.name+"-batches.json", encodeGoldenLog(t, sc.about+"; three commands to a batch entry", goldenEntries(t, sc.cmds, true)))
	}

	snap := writeGoldenSnapshot(t, fmt.Sprintf("snapshot-v%d", SnapshotVersion), goldenSnapshotScenario(),
		"the state after the import scenario's entries but its last, as a snapshot file (`placementd snapshot save`)")
	writeGoldenSnapshot(t, fmt.Sprintf("snapshot-v%d-write-order", SnapshotVersion), writeOrderScenario(),
		"the state after the write-order scenario's entries (consumers' allocations in the order written), as a snapshot file")

	// A Raft snapshot as package cluster writes it: its section (a
	// membership table, opaque here) and the same snapshot file.
	section := clusterSectionExamples[ClusterSectionVersion]
	if section == "" {
		t.Fatalf("no example of a cluster section v%d in clusterSectionExamples", ClusterSectionVersion)
	}
	var raftSnap bytes.Buffer
	if err := WriteClusterSection(&raftSnap, ClusterSectionVersion, []byte(section)); err != nil {
		t.Fatal(err)
	}
	raftSnap.Write(snap.data)
	name := fmt.Sprintf("raft-snapshot-cluster-v%d-snapshot-v%d", ClusterSectionVersion, SnapshotVersion)
	writeOnce(t, name+".snap", raftSnap.Bytes())
	writeOnce(t, name+".json", sidecar(t, goldenSnapshot{
		About:  "a Raft snapshot as package cluster writes it: the cluster's section (its membership table) and the snapshot file",
		Digest: snap.Digest, LastIndex: snap.LastIndex, ClusterSection: section}))
}

type writtenSnapshot struct {
	goldenSnapshot
	data []byte
}

// writeGoldenSnapshot applies a scenario's commands, each its own entry,
// and writes the state as a golden snapshot file NAME.snap with its
// sidecar NAME.json (unless they exist).
func writeGoldenSnapshot(t *testing.T, name string, cmds []state.Command, about string) writtenSnapshot {
	f := New()
	for i, data := range goldenEntries(t, cmds, false) {
		f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data})
	}
	var out writtenSnapshot
	out.About = about
	out.Digest, out.LastIndex = f.Digest()
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, f.Version().Image()); err != nil {
		t.Fatal(err)
	}
	out.data = buf.Bytes()
	writeOnce(t, name+".snap", out.data)
	writeOnce(t, name+".json", sidecar(t, out.goldenSnapshot))
	return out
}

// clusterSectionExamples are payloads of the cluster's snapshot section
// as package cluster writes them, by section version, for the golden
// Raft snapshots (cluster's TestClusterSnapshotGolden reads them).
var clusterSectionExamples = map[int]string{
	1: `{"n1":"10.0.0.1:8778","n2":"10.0.0.2:8778","n3":"[fd00::3]:8778"}`,
	2: `{"n1":{"http_addr":"10.0.0.1:8778","region":"east","zone":"east-a"},"n2":{"http_addr":"10.0.0.2:8778","region":"west"},"n3":{"http_addr":"[fd00::3]:8778"}}`,
	3: `{"members":{"n1":{"http_addr":"10.0.0.1:8778","region":"east","zone":"east-a","build_version":"0.10.0+444b1523d678","reads":{"entry_version":4,"snapshot_version":1,"cluster_section_version":3}},"n2":{"http_addr":"10.0.0.2:8778","region":"west","build_version":"0.10.0","reads":{"entry_version":4,"snapshot_version":1,"cluster_section_version":3}},"n3":{"http_addr":"[fd00::3]:8778","build_version":"0.11.0","reads":{"entry_version":5,"snapshot_version":2,"cluster_section_version":3}}},"cluster_version":{"entry_version":4,"snapshot_version":1,"cluster_section_version":3,"build_version":"0.10.0"}}`,
}

func sidecar(t *testing.T, s goldenSnapshot) []byte {
	b, err := stdjson.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func goldenFiles(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(goldenDir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no golden files %s in %s", pattern, goldenDir)
	}
	return files
}

func readGoldenLogs(t *testing.T) map[string]goldenLog {
	t.Helper()
	out := map[string]goldenLog{}
	files := append(goldenFiles(t, "*-singles.json"), goldenFiles(t, "*-batches.json")...)
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var log goldenLog
		if err := stdjson.Unmarshal(data, &log); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(log.Steps) == 0 {
			t.Fatalf("%s holds no entry", path)
		}
		out[filepath.Base(path)] = log
	}
	return out
}

// Every golden log replays, entry by entry, to the results and digests it
// recorded, and each entry decodes to commands that keep every value the
// entry holds.
func TestGoldenLogsReplay(t *testing.T) {
	for name, log := range readGoldenLogs(t) {
		t.Run(name, func(t *testing.T) {
			f := New()
			for _, step := range log.Steps {
				at := fmt.Sprintf("entry %d %.60s", step.Index, step.Entry)
				if err := decodesWhole(step.Entry); err != nil {
					t.Errorf("%s: %v", at, err)
				}
				results := resultsOf(t, f.Apply(&raft.Log{Index: step.Index, Type: raft.LogCommand, Data: step.Entry}))
				if err := sameResults(results, step.Results); err != nil {
					t.Fatalf("%s: %v", at, err)
				}
				if got, _ := f.Digest(); got != step.Digest {
					t.Fatalf("%s: the state's digest is %s, the golden file says %s", at, got, step.Digest)
				}
			}
			if err := statecheck.Consistent(f.Version()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func sameResults(got, want []goldenResult) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d results, the golden file has %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if !reflect.DeepEqual(g.Error, w.Error) {
			return fmt.Errorf("result %d: error %+v, the golden file has %+v", i, g.Error, w.Error)
		}
		var gv, wv any
		stdjson.Unmarshal(g.Value, &gv)
		stdjson.Unmarshal(w.Value, &wv)
		if !reflect.DeepEqual(gv, wv) {
			return fmt.Errorf("result %d: value %s, the golden file has %s", i, g.Value, w.Value)
		}
	}
	return nil
}

// decodesWhole checks that the commands an entry decodes to keep every
// value the entry holds: each command, encoded again (with
// encoding/json, not the decoder's library), must hold every key and
// value of the entry's payload. Keys with a zero value are left out on
// both sides: fields written with omitempty, and fields added since the
// entry was written. A renamed field (its old key no longer read) or a
// value read differently fails.
func decodesWhole(entry []byte) error {
	entries, err := Decode(entry)
	if err != nil {
		return err
	}
	var payloads []stdjson.RawMessage
	var env struct {
		Kind    string             `json:"k"`
		Payload stdjson.RawMessage `json:"p"`
	}
	if err := stdjson.Unmarshal(entry, &env); err != nil {
		return err
	}
	if env.Kind == batchKind {
		var elems []struct {
			Payload stdjson.RawMessage `json:"p"`
		}
		if err := stdjson.Unmarshal(env.Payload, &elems); err != nil {
			return err
		}
		for _, e := range elems {
			payloads = append(payloads, e.Payload)
		}
	} else {
		payloads = append(payloads, env.Payload)
	}
	if len(payloads) != len(entries) {
		return fmt.Errorf("%d payloads, %d commands decoded", len(payloads), len(entries))
	}
	for i, e := range entries {
		again, err := stdjson.Marshal(e.Cmd)
		if err != nil {
			return err
		}
		was, is := nonZeroJSON(payloads[i]), nonZeroJSON(again)
		if !reflect.DeepEqual(was, is) {
			return fmt.Errorf("%s does not decode whole:\nin the entry %s\ndecoded as   %s", e.Cmd.Kind(), payloads[i], again)
		}
	}
	return nil
}

// nonZeroJSON decodes JSON (numbers kept as written) and leaves out every
// object key whose value is zero: null, false, 0, "", or an empty array
// or object once its own zero keys are left out.
func nonZeroJSON(data []byte) any {
	dec := stdjson.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err.Error()
	}
	return dropZeros(v)
}

func dropZeros(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if x = dropZeros(x); !isZeroJSON(x) {
				out[k] = x
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = dropZeros(x)
		}
		return out
	}
	return v
}

func isZeroJSON(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case string:
		return v == ""
	case stdjson.Number:
		return v == "0"
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// The golden logs hold every command kind in the table (commands.go),
// each both alone in an entry and inside a batch, and entries of every envelope version this
// build writes: a new command or version fails here until a golden
// scenario uses it.
func TestGoldenCoversEveryKind(t *testing.T) {
	single, batched := map[string]bool{}, map[string]bool{}
	versions := map[int]bool{}
	for name, log := range readGoldenLogs(t) {
		for _, step := range log.Steps {
			var env envelope
			if err := stdjson.Unmarshal(step.Entry, &env); err != nil {
				t.Fatal(err)
			}
			versions[env.Version] = true
			entries, err := Decode(step.Entry)
			if err != nil {
				t.Fatalf("%s entry %d: %v", name, step.Index, err)
			}
			for _, e := range entries {
				if len(entries) == 1 {
					single[e.Cmd.Kind()] = true
				} else {
					batched[e.Cmd.Kind()] = true
				}
			}
		}
	}
	for _, kind := range CommandKinds() {
		if !single[kind] {
			t.Errorf("no golden entry holds %s alone (v1): add a scenario to golden_cases_test.go and run go test ./fsm -run TestWriteGolden -update-golden", kind)
		}
		if !batched[kind] {
			t.Errorf("no golden batch entry holds %s", kind)
		}
	}
	for _, e := range readGoldenClusterEntries(t) {
		versions[e.EntryVersion] = true
	}
	for v := 1; v <= EntryVersion; v++ {
		if !versions[v] {
			t.Errorf("no golden entry is of log entry format v%d", v)
		}
	}
}

// fieldsSet records, for every struct type, which of its fields (by Go
// name) hold a non-zero value somewhere in v.
func fieldsSet(v reflect.Value, set map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			fieldsSet(v.Elem(), set)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			fieldsSet(v.Index(i), set)
		}
	case reflect.Struct:
		if encodesItself(v.Type()) {
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.Anonymous && !v.Field(i).IsZero() {
				set[v.Type().Name()+"."+f.Name] = true
			}
			fieldsSet(v.Field(i), set)
		}
	}
}

// fieldsOf lists every named field of the persisted struct types
// reachable from roots, as Type.Field.
func fieldsOf(roots ...reflect.Type) []string {
	seen := map[reflect.Type]string{}
	for _, r := range roots {
		persistedStructs(r, r.Name(), seen)
	}
	var out []string
	for typ := range seen {
		for f := range typ.Fields() {
			if !f.Anonymous {
				out = append(out, typ.Name()+"."+f.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// snapshotAlwaysZero are the image fields no state can give a non-zero
// value: a golden snapshot cannot hold one. They are written all the same
// (no omitempty), so a rename still changes the digest.
var snapshotAlwaysZero = map[string]string{
	"Trait.Standard": "an image holds custom traits only",
}

// Every field of every command holds a non-zero value in some golden
// entry, and every field of the image in some golden snapshot, so that the
// checks above see each of them read back: a new field fails here until a
// new golden scenario gives it a value.
func TestGoldenFieldsCovered(t *testing.T) {
	set := map[string]bool{}
	for _, log := range readGoldenLogs(t) {
		for _, step := range log.Steps {
			entries, err := Decode(step.Entry)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				fieldsSet(reflect.ValueOf(e.Cmd), set)
			}
		}
	}
	var commandTypes []reflect.Type
	for _, kind := range CommandKinds() {
		commandTypes = append(commandTypes, reflect.TypeOf(NewCommand(kind)).Elem())
	}
	for _, field := range fieldsOf(commandTypes...) {
		if !set[field] {
			t.Errorf("no golden entry gives %s a value: add a scenario that does (golden_cases_test.go)", field)
		}
	}

	imageSet := map[string]bool{}
	for _, path := range goldenFiles(t, "snapshot-v*.snap") {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := ReadSnapshot(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		fieldsSet(reflect.ValueOf(img), imageSet)
	}
	for _, field := range fieldsOf(reflect.TypeOf(state.Image{})) {
		if _, ok := snapshotAlwaysZero[field]; !imageSet[field] && !ok {
			t.Errorf("no golden snapshot gives %s a value", field)
		}
	}
}

// Every golden snapshot reads and loads to the digest and index its
// sidecar records, through the same path a node's restore takes; a Raft
// snapshot's cluster section reads back as written.
func TestGoldenSnapshotsLoad(t *testing.T) {
	for _, path := range goldenFiles(t, "*snapshot-*.snap") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var want goldenSnapshot
			side, err := os.ReadFile(strings.TrimSuffix(path, ".snap") + ".json")
			if err != nil {
				t.Fatal(err)
			}
			if err := stdjson.Unmarshal(side, &want); err != nil {
				t.Fatal(err)
			}
			file, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			_, section, rest, err := ReadClusterSection(file)
			if err != nil {
				t.Fatal(err)
			}
			if string(section) != want.ClusterSection {
				t.Fatalf("cluster section %q, the golden file has %q", section, want.ClusterSection)
			}
			f := New()
			if err := f.Restore(io.NopCloser(rest)); err != nil {
				t.Fatal(err)
			}
			if digest, index := f.Digest(); digest != want.Digest || index != want.LastIndex {
				t.Fatalf("loaded to %s@%d, the golden file says %s@%d", digest, index, want.Digest, want.LastIndex)
			}
			if err := statecheck.Consistent(f.Version()); err != nil {
				t.Fatal(err)
			}
		})
	}
	if files := goldenFiles(t, "snapshot-v*.snap"); !slices.Contains(files, filepath.Join(goldenDir, fmt.Sprintf("snapshot-v%d.snap", SnapshotVersion))) {
		t.Fatalf("no golden snapshot of the current format v%d: write it with -update-golden", SnapshotVersion)
	}
}
