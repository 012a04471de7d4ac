package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster/backend"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/internal/statecheck"
)

// Fuzzing of every request body and query string parser through the real
// handlers. Each input is sent to the API over a fixed state (providers in
// a tree with inventories, traits, aggregates and consumers); the API must
// not answer 5xx (a panic is a 500 from the fault wrapper), a refused
// request must leave the state exactly as it was, and an accepted one must
// leave the store's indexes consistent with its data.
//
// The seed corpora in testdata/fuzz/ are the conformance files' requests
// (testdata/gen-fuzz-seeds.py); they run as ordinary tests in `go test`.
// To fuzz one target: go test ./httpapi -run '^$' -fuzz '^FuzzAllocationsBody$' -parallel 1

// Identifiers of the fuzz fixture. testdata/gen-fuzz-seeds.py substitutes
// the conformance files' variables with these, so seeds name things that
// exist.
const (
	fuzzRoot     = "f0000000-0000-4000-8000-000000000001" // root, compute node
	fuzzChild    = "f0000000-0000-4000-8000-000000000002" // child of fuzzRoot
	fuzzShared   = "f0000000-0000-4000-8000-000000000003" // sharing provider
	fuzzEmpty    = "f0000000-0000-4000-8000-000000000004" // no inventory
	fuzzConsumer = "c0000000-0000-4000-8000-000000000001" // holds allocations
	fuzzTyped    = "c0000000-0000-4000-8000-000000000002" // consumer type
	fuzzNew      = "c0000000-0000-4000-8000-00000000000f" // not a consumer
	fuzzAgg      = "a0000000-0000-4000-8000-000000000001"
)

// directBackend applies commands to an FSM the way a node does, through
// the log entry encoding, without consensus: fuzzing wants many thousands
// of requests a second.
type directBackend struct {
	mu    sync.Mutex
	fsm   *fsm.FSM
	index uint64
	// record, when set, sees every log entry applied and whether the
	// command was accepted (-fuzz.record-decoder-seeds).
	record func(entry []byte, accepted bool)
}

func (b *directBackend) Apply(ctx context.Context, cmd state.Command) (any, error) {
	data, err := fsm.Encode(cmd, time.Now())
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.index++
	res := b.fsm.Apply(&raft.Log{Index: b.index, Type: raft.LogCommand, Data: data})
	b.mu.Unlock()
	r := res.(fsm.Result)
	if b.record != nil {
		b.record(data, r.Err == nil)
	}
	return r.Value, r.Err
}

func (b *directBackend) Read(ctx context.Context, opts backend.ReadOptions) (*state.Store, error) {
	return b.fsm.Version(), nil
}

type fuzzAPI struct {
	backend *directBackend
	api     *Server
	fixture []byte // snapshot of the fixture state
}

var (
	fuzzOnce sync.Once
	fuzzInst *fuzzAPI
	fuzzErr  error
)

// fuzzServer returns the process's fuzz API, reset to the fixture.
func fuzzServer(t *testing.T) *fuzzAPI {
	t.Helper()
	fuzzOnce.Do(func() { fuzzInst, fuzzErr = newFuzzAPI() })
	if fuzzErr != nil {
		t.Fatal(fuzzErr)
	}
	a := fuzzInst
	if err := a.backend.fsm.Restore(io.NopCloser(bytes.NewReader(a.fixture))); err != nil {
		t.Fatal(err)
	}
	return a
}

func newFuzzAPI() (*fuzzAPI, error) {
	a := &fuzzAPI{backend: &directBackend{fsm: fsm.New()}}
	if *recordDecoderSeeds {
		a.backend.record = a.recordSeeds
	}
	a.api = New(a.backend, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	steps := []struct {
		method, path, version, body string
	}{
		{"POST", "/resource_providers", "1.20", `{"name": "fuzz-root", "uuid": "` + fuzzRoot + `"}`},
		{"POST", "/resource_providers", "1.20", `{"name": "fuzz-child", "uuid": "` + fuzzChild + `", "parent_provider_uuid": "` + fuzzRoot + `"}`},
		{"POST", "/resource_providers", "1.20", `{"name": "fuzz-shared", "uuid": "` + fuzzShared + `"}`},
		{"POST", "/resource_providers", "1.20", `{"name": "fuzz-empty", "uuid": "` + fuzzEmpty + `"}`},
		{"POST", "/resource_classes", "1.2", `{"name": "CUSTOM_FUZZ"}`},
		{"PUT", "/traits/CUSTOM_FUZZ_TRAIT", "1.6", ``},
		{"PUT", "/resource_providers/" + fuzzRoot + "/inventories", "1.26", `{"resource_provider_generation": 0, "inventories": {
			"VCPU": {"total": 32, "max_unit": 16, "allocation_ratio": 4.0},
			"MEMORY_MB": {"total": 65536, "reserved": 512, "step_size": 256},
			"DISK_GB": {"total": 1000, "min_unit": 10}}}`},
		{"PUT", "/resource_providers/" + fuzzChild + "/inventories", "1.26", `{"resource_provider_generation": 0, "inventories": {
			"CUSTOM_FUZZ": {"total": 10}, "SRIOV_NET_VF": {"total": 8}}}`},
		{"PUT", "/resource_providers/" + fuzzShared + "/inventories", "1.26", `{"resource_provider_generation": 0, "inventories": {
			"DISK_GB": {"total": 2000, "allocation_ratio": 1.5}}}`},
		{"PUT", "/resource_providers/" + fuzzRoot + "/traits", "1.6", `{"resource_provider_generation": 1, "traits": ["HW_CPU_X86_AVX2", "CUSTOM_FUZZ_TRAIT"]}`},
		{"PUT", "/resource_providers/" + fuzzShared + "/traits", "1.6", `{"resource_provider_generation": 1, "traits": ["MISC_SHARES_VIA_AGGREGATE"]}`},
		{"PUT", "/resource_providers/" + fuzzRoot + "/aggregates", "1.19", `{"resource_provider_generation": 2, "aggregates": ["` + fuzzAgg + `"]}`},
		{"PUT", "/resource_providers/" + fuzzShared + "/aggregates", "1.19", `{"resource_provider_generation": 2, "aggregates": ["` + fuzzAgg + `"]}`},
		{"PUT", "/allocations/" + fuzzConsumer, "1.28", `{"consumer_generation": null, "project_id": "fuzz-project", "user_id": "fuzz-user", "allocations": {
			"` + fuzzRoot + `": {"resources": {"VCPU": 2, "MEMORY_MB": 1024}},
			"` + fuzzShared + `": {"resources": {"DISK_GB": 20}}}}`},
		{"PUT", "/allocations/" + fuzzTyped, "1.38", `{"consumer_generation": null, "project_id": "fuzz-project", "user_id": "other-user", "consumer_type": "INSTANCE", "allocations": {
			"` + fuzzChild + `": {"resources": {"CUSTOM_FUZZ": 3}}}}`},
	}
	for _, st := range steps {
		rec := a.serve(st.method, st.path, "placement "+st.version, []byte(st.body))
		if rec.Code/100 != 2 {
			return nil, fmt.Errorf("fuzz fixture: %s %s: %d %s", st.method, st.path, rec.Code, rec.Body)
		}
	}
	snap, err := a.backend.fsm.Snapshot()
	if err != nil {
		return nil, err
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		return nil, err
	}
	a.fixture = sink.Bytes()
	if *recordDecoderSeeds {
		if err := os.WriteFile(fixtureSnapshotFile, a.fixture, 0o644); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// recordDecoderSeeds makes the fuzz targets' seed runs write the log
// entries they apply and the states they reach as seeds of the decoders'
// fuzz targets (fsm.Decode, fsm.ReadSnapshot with state.Load):
//
//	go test ./httpapi -run '^Fuzz' -fuzz.record-decoder-seeds
var recordDecoderSeeds = flag.Bool("fuzz.record-decoder-seeds", false,
	"write the log entries and states of the fuzz seed runs as seeds of fsm's fuzz targets")

const (
	fixtureSnapshotFile = "../fsm/testdata/fuzz-fixture.snap"
	entrySeedDir        = "../fsm/testdata/fuzz/FuzzDecodeEntry"
	imageSeedDir        = "../fsm/testdata/fuzz/FuzzSnapshotRead"
	maxImageSeeds       = 40
)

var imageSeeds = map[string]bool{}

func (a *fuzzAPI) recordSeeds(entry []byte, accepted bool) {
	writeCorpusFile(entrySeedDir, fmt.Sprintf("[]byte(%q)", entry))
	if !accepted || len(imageSeeds) >= maxImageSeeds {
		return
	}
	var img []byte
	a.backend.fsm.Read(func(s *state.Store) { img, _ = json.Marshal(s.Image()) })
	if key := string(img); !imageSeeds[key] {
		imageSeeds[key] = true
		writeCorpusFile(imageSeedDir, "bool(true)", fmt.Sprintf("[]byte(%q)", img))
	}
}

// writeCorpusFile writes one seed in the fuzz corpus format, named by
// its content.
func writeCorpusFile(dir string, values ...string) {
	text := "go test fuzz v1\n" + strings.Join(values, "\n") + "\n"
	sum := sha256.Sum256([]byte(text))
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "api-"+hex.EncodeToString(sum[:8])), []byte(text), 0o644)
}

// memSink collects a snapshot in memory.
type memSink struct{ bytes.Buffer }

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { return nil }
func (s *memSink) Close() error  { return nil }

// serve sends one request to the API as the admin.
func (a *fuzzAPI) serve(method, target, version string, body []byte) *httptest.ResponseRecorder {
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, "http://placement"+target, rd)
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Accept", "application/json")
	if version != "" {
		req.Header.Set("OpenStack-API-Version", version)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	a.api.ServeHTTP(rec, req)
	return rec
}

func (a *fuzzAPI) digest() (d string, err error) {
	a.backend.fsm.Read(func(s *state.Store) {
		d = statecheck.Digest(s)
		err = statecheck.Consistent(s)
	})
	return d, err
}

// fuzzVersion turns a fuzzed byte into a microversion header: 1.0-1.39,
// or "latest".
func fuzzVersion(minor uint8) string {
	if minor <= uint8(MaxVersion.Minor) {
		return fmt.Sprintf("placement 1.%d", minor)
	}
	return "placement latest"
}

// check sends the request and holds the API to its promises.
// fuzzRequestBound bounds one fuzzed request; the largest bodies the
// fuzzer makes take milliseconds.
const fuzzRequestBound = 10 * time.Second

func (a *fuzzAPI) check(t *testing.T, method, target string, minor uint8, body []byte) {
	t.Helper()
	before, err := a.digest()
	if err != nil {
		t.Fatalf("fixture inconsistent: %v", err)
	}
	// A request that does not finish is a finding too (a client could
	// hold the server with it). Panicking outside the test goroutine
	// stops the fuzz worker, so the fuzzer keeps the input as a crasher.
	watchdog := time.AfterFunc(fuzzRequestBound, func() {
		panic(fmt.Sprintf("%s %s (%s) body %q: no answer after %v", method, target, fuzzVersion(minor), body, fuzzRequestBound))
	})
	rec := a.serve(method, target, fuzzVersion(minor), body)
	watchdog.Stop()
	after, err := a.digest()
	desc := fmt.Sprintf("%s %s (%s) body %q", method, target, fuzzVersion(minor), body)
	t.Logf("answered %d", rec.Code)
	if rec.Code >= 500 {
		t.Fatalf("%s: answered %d: %s", desc, rec.Code, rec.Body)
	}
	if err != nil {
		t.Fatalf("%s: answered %d and left the state inconsistent: %v", desc, rec.Code, err)
	}
	if (rec.Code >= 400 || method == "GET") && after != before {
		t.Fatalf("%s: answered %d but changed the state", desc, rec.Code)
	}
	if rec.Code >= 400 {
		// Every refusal is in Placement's error format.
		checkPlacementError(t, desc, rec)
	}
	if rec.Code != http.StatusNoContent && rec.Body.Len() > 0 && !json.Valid(rec.Body.Bytes()) &&
		strings.Contains(rec.Header().Get("Content-Type"), "json") {
		t.Fatalf("%s: answered %d with a body that is not JSON: %q", desc, rec.Code, rec.Body)
	}
}

// pick returns the option an op byte selects.
func pick[T any](op uint8, options ...T) T { return options[int(op)%len(options)] }

func FuzzProviderBody(f *testing.F) {
	f.Add(uint8(0), uint8(20), []byte(`{"name": "new", "parent_provider_uuid": "`+fuzzRoot+`"}`))
	f.Fuzz(func(t *testing.T, op, minor uint8, body []byte) {
		a := fuzzServer(t)
		switch op % 3 {
		case 0:
			a.check(t, "POST", "/resource_providers", minor, body)
		case 1:
			a.check(t, "PUT", "/resource_providers/"+fuzzChild, minor, body)
		default:
			a.check(t, "PUT", "/resource_providers/"+fuzzRoot, minor, body)
		}
	})
}

func FuzzInventoriesBody(f *testing.F) {
	f.Add(uint8(0), uint8(26), []byte(`{"resource_provider_generation": 4, "inventories": {"VCPU": {"total": 64}, "MEMORY_MB": {"total": 4096}, "DISK_GB": {"total": 100}}}`))
	// Integers at and past Python's 4300 digits (refused before they are converted).
	f.Add(uint8(0), uint8(26), []byte(`{"resource_provider_generation": 4, "inventories": {"VCPU": {"total": `+strings.Repeat("9", 4300)+`}}}`))
	f.Add(uint8(2), uint8(26), []byte(`{"resource_provider_generation": 4, "total": `+strings.Repeat("9", 100000)+`, "allocation_ratio": 1`+strings.Repeat("0", 5000)+`.5}`))
	f.Fuzz(func(t *testing.T, op, minor uint8, body []byte) {
		a := fuzzServer(t)
		rp := pick(op/4, fuzzRoot, fuzzChild, fuzzShared, fuzzEmpty)
		switch op % 4 {
		case 0:
			a.check(t, "PUT", "/resource_providers/"+rp+"/inventories", minor, body)
		case 1:
			a.check(t, "POST", "/resource_providers/"+rp+"/inventories", minor, body)
		case 2:
			a.check(t, "PUT", "/resource_providers/"+rp+"/inventories/DISK_GB", minor, body)
		default:
			a.check(t, "PUT", "/resource_providers/"+rp+"/inventories/CUSTOM_FUZZ", minor, body)
		}
	})
}

func FuzzProviderTraitsBody(f *testing.F) {
	f.Add(uint8(0), uint8(6), []byte(`{"resource_provider_generation": 4, "traits": ["CUSTOM_FUZZ_TRAIT"]}`))
	f.Fuzz(func(t *testing.T, op, minor uint8, body []byte) {
		a := fuzzServer(t)
		rp := pick(op, fuzzRoot, fuzzChild, fuzzShared, fuzzEmpty)
		a.check(t, "PUT", "/resource_providers/"+rp+"/traits", minor, body)
	})
}

func FuzzAggregatesBody(f *testing.F) {
	f.Add(uint8(0), uint8(19), []byte(`{"resource_provider_generation": 4, "aggregates": ["`+fuzzAgg+`"]}`))
	f.Add(uint8(1), uint8(1), []byte(`["`+fuzzAgg+`"]`))
	f.Fuzz(func(t *testing.T, op, minor uint8, body []byte) {
		a := fuzzServer(t)
		rp := pick(op, fuzzRoot, fuzzChild, fuzzShared, fuzzEmpty)
		a.check(t, "PUT", "/resource_providers/"+rp+"/aggregates", minor, body)
	})
}

// FuzzAllocationsBody covers every format of PUT /allocations/{consumer}:
// the list (1.0-1.11), the dict (1.12+), consumer generations (1.28+),
// mappings (1.34+) and consumer types (1.38+).
func FuzzAllocationsBody(f *testing.F) {
	f.Add(uint8(0), uint8(28), []byte(`{"consumer_generation": 1, "project_id": "p", "user_id": "u", "allocations": {"`+fuzzRoot+`": {"resources": {"VCPU": 1}}}}`))
	f.Add(uint8(0), uint8(28), []byte(`{"consumer_generation": -`+strings.Repeat("1", 4301)+`, "project_id": "p", "user_id": "u", "allocations": {"`+fuzzRoot+`": {"resources": {"VCPU": `+strings.Repeat("1", 50000)+`}}}}`))
	f.Add(uint8(2), uint8(11), []byte(`{"allocations": [{"resource_provider": {"uuid": "`+fuzzRoot+`"}, "resources": {"VCPU": 1}}], "project_id": "p", "user_id": "u"}`))
	f.Fuzz(func(t *testing.T, op, minor uint8, body []byte) {
		a := fuzzServer(t)
		consumer := pick(op, fuzzConsumer, fuzzTyped, fuzzNew, strings.ReplaceAll(fuzzConsumer, "-", ""))
		a.check(t, "PUT", "/allocations/"+consumer, minor, body)
	})
}

func FuzzPostAllocationsBody(f *testing.F) {
	f.Add(uint8(0), uint8(28), []byte(`{"`+fuzzConsumer+`": {"consumer_generation": 1, "project_id": "p", "user_id": "u", "allocations": {}}}`))
	f.Fuzz(func(t *testing.T, op, minor uint8, body []byte) {
		a := fuzzServer(t)
		a.check(t, "POST", "/allocations", minor, body)
	})
}

func FuzzReshaperBody(f *testing.F) {
	f.Add(uint8(0), uint8(30), []byte(`{"inventories": {"`+fuzzEmpty+`": {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}}}, "allocations": {}}`))
	f.Fuzz(func(t *testing.T, op, minor uint8, body []byte) {
		a := fuzzServer(t)
		a.check(t, "POST", "/reshaper", minor, body)
	})
}

func FuzzResourceClassBody(f *testing.F) {
	f.Add(uint8(0), uint8(2), []byte(`{"name": "CUSTOM_NEW"}`))
	f.Fuzz(func(t *testing.T, op, minor uint8, body []byte) {
		a := fuzzServer(t)
		if op%2 == 0 {
			a.check(t, "POST", "/resource_classes", minor, body)
		} else {
			a.check(t, "PUT", "/resource_classes/CUSTOM_FUZZ", minor, body)
		}
	})
}

// fuzzQuery checks a GET with a fuzzed query string; a query that is not
// a valid URL part is escaped the way a client library would send it.
func fuzzQuery(t *testing.T, path string, minor uint8, query string) {
	a := fuzzServer(t)
	target := path + "?" + escapeRawQuery(query)
	a.check(t, "GET", target, minor, nil)
}

// escapeRawQuery percent-encodes the bytes a request line cannot carry,
// keeping everything else (including bad escapes) as sent.
func escapeRawQuery(q string) string {
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c <= ' ' || c >= 0x7f || c == '#' || c == '"' || c == '<' || c == '>' || c == '\\' || c == '^' || c == '`' || c == '{' || c == '|' || c == '}' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func FuzzProvidersQuery(f *testing.F) {
	f.Add(uint8(39), "resources=VCPU:1&in_tree="+fuzzRoot)
	f.Add(uint8(39), "resources=VCPU:"+strings.Repeat("9", 4301))
	f.Fuzz(func(t *testing.T, minor uint8, query string) {
		fuzzQuery(t, "/resource_providers", minor, query)
	})
}

func FuzzCandidatesQuery(f *testing.F) {
	f.Add(uint8(39), "resources=VCPU:1,DISK_GB:10&required=CUSTOM_FUZZ_TRAIT&group_policy=none")
	f.Add(uint8(39), "resources=VCPU:"+strings.Repeat("9", 4300)+"&resources1=DISK_GB:1_"+strings.Repeat("0", 4300)+"&limit="+strings.Repeat("7", 5000))
	f.Fuzz(func(t *testing.T, minor uint8, query string) {
		fuzzQuery(t, "/allocation_candidates", minor, query)
	})
}

func FuzzUsagesQuery(f *testing.F) {
	f.Add(uint8(9), "project_id=fuzz-project&user_id=fuzz-user")
	f.Fuzz(func(t *testing.T, minor uint8, query string) {
		fuzzQuery(t, "/usages", minor, query)
	})
}

func FuzzTraitsQuery(f *testing.F) {
	f.Add(uint8(6), "name=startswith:CUSTOM&associated=true")
	f.Fuzz(func(t *testing.T, minor uint8, query string) {
		fuzzQuery(t, "/traits", minor, query)
	})
}

// TestFuzzFixtureConsistent makes sure the fixture the fuzz targets start
// from is what they expect, and that the checks can fail: a request that
// changes the state answers 2xx and changes the digest.
func TestFuzzFixtureConsistent(t *testing.T) {
	a := fuzzServer(t)
	before, err := a.digest()
	if err != nil {
		t.Fatal(err)
	}
	rec := a.serve("DELETE", "/allocations/"+fuzzConsumer, "placement 1.28", nil)
	if rec.Code != http.StatusNoContent {
		t.Fatalf("delete fixture consumer: %d %s", rec.Code, rec.Body)
	}
	if after, _ := a.digest(); after == before {
		t.Fatal("the digest did not change with the state")
	}
	a = fuzzServer(t)
	if again, _ := a.digest(); again != before {
		t.Fatal("the fuzz API was not reset to the fixture")
	}
	var s *state.Store
	a.backend.fsm.Read(func(st *state.Store) { s = st })
	if s.Providers.Len() != 4 || s.Consumers.Len() != 2 {
		t.Fatalf("fixture has %d providers and %d consumers", s.Providers.Len(), s.Consumers.Len())
	}
	// Break an index on purpose: the consistency check must notice.
	a.backend.fsm.Read(func(st *state.Store) { st.Providers.Get(fuzzRoot).Usages["VCPU"]++ })
	if _, err := a.digest(); err == nil {
		t.Fatal("a drifted usage index went unnoticed")
	}
	fuzzServer(t)
}
