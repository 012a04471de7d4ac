package httpapi

import (
	"strings"
	"testing"
	"time"
)

// Integers longer than Python's 4300 digits are refused as upstream
// refuses them, at once: in a body with the json module's ValueError, in
// a query as int()'s (before, a 3.2 million digit body took 45 s of CPU,
// going on after its client left, and resources=VCPU:<900k digits> 2 s).
func TestHugeIntegersRefused(t *testing.T) {
	api := newTestAPI(t, Config{})
	hdr := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json",
		"OpenStack-API-Version": "placement latest"}

	start := time.Now()
	r := send(t, api.URL, "POST", "/resource_providers", hdr, strings.Repeat("1", 3_200_000))
	took := time.Since(start)
	want := "Malformed JSON: Exceeds the limit (4300 digits) for integer string conversion: value has 3200000 digits; use sys.set_int_max_str_digits() to increase the limit"
	if r.status != 400 || r.firstError(t)["detail"] != "The server could not comply with the request since it is either malformed or otherwise incorrect.\n\n "+want+"  " {
		t.Errorf("3.2M-digit body: %d %.300q", r.status, r.body)
	}
	t.Logf("3.2M-digit integer body answered %d in %v (sent over loopback, race detector on when -race)", r.status, took)

	huge := strings.Repeat("7", 5000)
	for _, path := range []string{"/allocation_candidates?resources=VCPU:" + huge, "/resource_providers?resources=VCPU:" + huge} {
		r := send(t, api.URL, "GET", path, hdr, "")
		if r.status != 400 || !strings.Contains(r.firstError(t)["detail"].(string), "Requested resource VCPU expected positive integer amount. Got: 7777") {
			t.Errorf("GET %.40s...: %d %.300q", path, r.status, r.body)
		}
	}
}
