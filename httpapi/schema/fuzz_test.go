package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Fuzz targets for the request body parser (pyLoads, Python's json module)
// and the validator with every Placement schema. The seed corpora in
// testdata/fuzz/ are request bodies from the conformance files; they run as
// ordinary tests in `go test`. To fuzz: go test ./httpapi/schema -run '^$'
// -fuzz '^FuzzPyLoads$' -parallel 1 (or `make fuzz`).

// fuzzBound bounds one parse or validation: a body that takes longer is a
// finding (a client could hold a request slot with it). The largest inputs
// the fuzzer makes take milliseconds.
const fuzzBound = 10 * time.Second

func watchdog(what string, body []byte) *time.Timer {
	// Panicking outside the test goroutine stops the fuzz worker, so the
	// fuzzer keeps the input as a crasher.
	return time.AfterFunc(fuzzBound, func() {
		panic(fmt.Sprintf("%s of %q took more than %v", what, body, fuzzBound))
	})
}

// FuzzPyLoads holds pyLoads to encoding/json where the two must agree: a
// document both can read (valid UTF-8, no BOM, no NaN/Infinity, which only
// Python accepts, nesting below the depth limit) is accepted by both or
// by neither, and both read the same value (objects as maps, numbers as
// their literals), except strings with lone surrogate escapes, which
// Python keeps and encoding/json replaces. A refusal is a DecodeError
// whose message has Python's "...: line L column C (char N)" form.
func FuzzPyLoads(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a": [1, 2.5, -0, 1e400, "x\u00e9\ud83d\ude00"], "b": null, "c": true}`,
		`{"a": 1, "a": 2}`, `NaN`, `[-Infinity]`, `"\ud800"`, "\ufeff{}", "\xff", `{"a" 1}`, `[1,]`, `01`, `1.`, ` 1 `} {
		f.Add([]byte(s))
	}
	// Integers at and past Python's digit limit, and long floats (no limit).
	for _, s := range []string{strings.Repeat("9", MaxIntDigits), "-" + strings.Repeat("9", MaxIntDigits+1),
		`{"total": ` + strings.Repeat("1", 100000) + `}`, `[` + strings.Repeat("7", 5000) + `.5, 1]`, strings.Repeat("3", 5000) + "e1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w := watchdog("pyLoads", body)
		v, err := pyLoads(body)
		w.Stop()
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("pyLoads(%q): error %T is not a DecodeError: %v", body, err, err)
			}
			if msg := err.Error(); msg == "" || (!strings.Contains(msg, "(char ") && !strings.Contains(msg, "codec can't decode") &&
				!strings.Contains(msg, "nested too deeply") && !strings.HasPrefix(msg, "Exceeds the limit (4300 digits)")) {
				t.Fatalf("pyLoads(%q): error not in Python's words: %q", body, msg)
			}
		}
		comparable := utf8.Valid(body) && !bytes.HasPrefix(body, []byte("\ufeff")) &&
			!bytes.Contains(body, []byte("NaN")) && !bytes.Contains(body, []byte("Infinity")) &&
			bytes.Count(body, []byte("["))+bytes.Count(body, []byte("{")) < maxDepth &&
			!hasLongDigitRun(body) // Python refuses long integers, Go does not
		if !comparable {
			return
		}
		if goValid := json.Valid(body); goValid != (err == nil) {
			t.Fatalf("body %q: encoding/json valid=%v, pyLoads error=%v", body, goValid, err)
		}
		if err != nil || hasSurrogateEscape(body) {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("body %q: encoding/json: %v", body, err)
		}
		if got := toPlain(v); !reflect.DeepEqual(got, want) {
			t.Fatalf("body %q: pyLoads read %#v, encoding/json %#v", body, got, want)
		}
	})
}

// hasLongDigitRun reports a run of more than MaxIntDigits digits.
func hasLongDigitRun(b []byte) bool {
	run := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			run = 0
		} else if run++; run > MaxIntDigits {
			return true
		}
	}
	return false
}

// hasSurrogateEscape reports a \uD800-\uDFFF escape, which Python keeps as
// a lone surrogate and encoding/json turns into U+FFFD.
func hasSurrogateEscape(b []byte) bool {
	lower := bytes.ToLower(b)
	for _, p := range []string{`\ud8`, `\ud9`, `\uda`, `\udb`, `\udc`, `\udd`, `\ude`, `\udf`} {
		if bytes.Contains(lower, []byte(p)) {
			return true
		}
	}
	return false
}

// fuzzSchemaNames are the generated cases' schemas in a fixed order, so a
// fuzzed index means the same schema in every run.
func fuzzSchemaNames() []string {
	names := make([]string, 0, len(pySchemas))
	for n := range pySchemas {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// FuzzValidate validates fuzzed bodies against every schema the
// conformance cases use (upstream's own and the generated ones): it must
// not panic or hang, a refusal is either a DecodeError or a
// ValidationError with a message (Python's str() of it, built with
// repr/pprint of the instance), and ValidateDoc agrees with ValidateJSON.
func FuzzValidate(f *testing.F) {
	names := fuzzSchemaNames()
	byName := map[string]int{}
	for i, n := range names {
		byName[n] = i
	}
	for _, c := range pyCases {
		if i, ok := byName[c.schema]; ok {
			f.Add(uint16(i), []byte(c.instance))
		}
	}
	f.Add(uint16(0), []byte(`{"name": "x"}`))
	f.Add(uint16(1), []byte(`{"total": `+strings.Repeat("9", MaxIntDigits)+`, "reserved": -`+strings.Repeat("9", MaxIntDigits+1)+`}`))
	f.Fuzz(func(t *testing.T, which uint16, body []byte) {
		name := names[int(which)%len(names)]
		s := pySchema(t, name)
		w := watchdog("validation with "+name, body)
		_, err := s.ValidateJSON(body)
		_, docErr := s.ValidateDoc(body)
		w.Stop()
		if (err == nil) != (docErr == nil) {
			t.Fatalf("%s, %q: ValidateJSON %v, ValidateDoc %v", name, body, err, docErr)
		}
		if err == nil {
			return
		}
		var de *DecodeError
		var ve *ValidationError
		switch {
		case errors.As(err, &de):
		case errors.As(err, &ve):
			if ve.Error() == "" {
				t.Fatalf("%s, %q: empty validation message", name, body)
			}
		default:
			t.Fatalf("%s, %q: error %T: %v", name, body, err, err)
		}
	})
}
