package front

import (
	"encoding/hex"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// A member token verifies only for the method, URI and hop count it was
// made for, within its window, under the same secret.
func TestMemberToken(t *testing.T) {
	h := &Handler{memberKey: memberKey("s3cret")}
	signed := func(method, uri, hops string) string {
		out := httptest.NewRequest(method, "http://peer"+uri, nil)
		if hops != "" {
			out.Header.Set(hopsHeader, hops)
		}
		h.signMember(out)
		return out.Header.Get(memberHeader)
	}
	check := func(hh *Handler, method, uri, hops, tok string) bool {
		r := httptest.NewRequest(method, uri, nil)
		if hops != "" {
			r.Header.Set(hopsHeader, hops)
		}
		r.Header.Set(memberHeader, tok)
		return hh.fromMember(r)
	}
	tok := signed("PUT", "/traits/CUSTOM_A?x=1", "1")
	if !check(h, "PUT", "/traits/CUSTOM_A?x=1", "1", tok) {
		t.Fatal("a fresh token does not verify")
	}
	for name, ok := range map[string]bool{
		"other hops":   check(h, "PUT", "/traits/CUSTOM_A?x=1", "-5", tok),
		"no hops":      check(h, "PUT", "/traits/CUSTOM_A?x=1", "", tok),
		"other method": check(h, "DELETE", "/traits/CUSTOM_A?x=1", "1", tok),
		"other uri":    check(h, "PUT", "/traits/CUSTOM_B?x=1", "1", tok),
		"other query":  check(h, "PUT", "/traits/CUSTOM_A?x=2", "1", tok),
		"other secret": check(&Handler{memberKey: memberKey("other")}, "PUT", "/traits/CUSTOM_A?x=1", "1", tok),
		"no secret":    check(&Handler{}, "PUT", "/traits/CUSTOM_A?x=1", "1", tok),
		"garbage":      check(h, "PUT", "/traits/CUSTOM_A?x=1", "1", "v1.1.zz"),
	} {
		if ok {
			t.Errorf("%s: the token verified", name)
		}
	}
	// A token made outside the window (the timestamp is part of the MAC,
	// so an old one is made here with the key directly).
	for _, age := range []time.Duration{-memberTokenWindow - time.Minute, memberTokenWindow + time.Minute} {
		ts := strconv.FormatInt(time.Now().Add(-age).Unix(), 10)
		mac := memberMAC(h.memberKey, ts, "PUT", "/traits/CUSTOM_A", "1")
		old := "v1." + ts + "." + hex.EncodeToString(mac)
		if check(h, "PUT", "/traits/CUSTOM_A", "1", old) {
			t.Errorf("a token %s old verified", age)
		}
	}
	// A hop count no member sends counts as the most.
	for v, want := range map[string]int{"": 0, "1": 1, "-3": maxHops, "x": maxHops} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set(hopsHeader, v)
		if got := hopsOf(r); got != want {
			t.Errorf("hopsOf(%q) = %d, want %d", v, got, want)
		}
	}
}
