package schema

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Integers are read as Python's json reads them since 3.11: at most 4300
// digits, a longer one refused with int()'s ValueError before it is
// converted (conversion takes time quadratic in the digits: 3.2 million
// took 45 s of CPU). Floats have no such limit.
func TestIntegerDigitLimit(t *testing.T) {
	limitMsg := func(n string) string {
		return "Exceeds the limit (4300 digits) for integer string conversion: value has " + n +
			" digits; use sys.set_int_max_str_digits() to increase the limit"
	}
	for _, c := range []struct{ body, want string }{
		{strings.Repeat("9", 4300), ""},
		{"-" + strings.Repeat("9", 4300), ""},
		{strings.Repeat("9", 4301), limitMsg("4301")},
		{"-" + strings.Repeat("9", 4301), limitMsg("4301")},
		{`{"a": [1, ` + strings.Repeat("1", 5000) + `]}`, limitMsg("5000")},
		{strings.Repeat("1", 5000) + ".", limitMsg("5000")}, // an int, then extra data: the int fails first
		{strings.Repeat("1", 5000) + ".5", ""},
		{strings.Repeat("1", 5000) + "e3", ""},
		{`[1 ` + strings.Repeat("1", 5000) + `]`, "Expecting ',' delimiter: line 1 column 4 (char 3)"},
	} {
		_, err := DecodeJSON([]byte(c.body))
		var de *DecodeError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%.20q (%d bytes): %v", c.body, len(c.body), err)
		case c.want != "" && (!errors.As(err, &de) || err.Error() != c.want):
			t.Errorf("%.20q (%d bytes) = %v, want %q", c.body, len(c.body), err, c.want)
		}
	}

	// 3.2 million digits: refused by the first pass, which builds nothing,
	// so the decode allocates far less than the body (before the limit it
	// copied the body and converted the integer).
	body := []byte(strings.Repeat("1", 3_200_000))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := DecodeJSON(body)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err == nil || err.Error() != limitMsg("3200000") {
		t.Fatalf("3.2M digits: %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10 {
		t.Errorf("3.2M digits: the refusal allocated %d bytes, want under 64 KiB (no conversion)", alloc)
	}
	t.Logf("3.2M-digit integer refused in %v", took)
}
