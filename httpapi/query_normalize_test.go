package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/placementd/placementd/fsm/state"
)

func TestNormalizeRequiredTraits(t *testing.T) {
	for _, tc := range []struct {
		query     string
		minor     int
		required  [][]string
		forbidden []string
	}{
		// Before 1.39 only the last required parameter counts.
		{"required=CUSTOM_FOO&required=HW_CPU_X86_MMX", 38, [][]string{{"HW_CPU_X86_MMX"}}, nil},
		{"required=CUSTOM_FOO&required=HW_CPU_X86_MMX", 39, [][]string{{"CUSTOM_FOO"}, {"HW_CPU_X86_MMX"}}, nil},
		{"required=in:A,B,%20A&required=C,!D,!!E", 39, [][]string{{"A", "B"}, {"C"}}, []string{"D", "E"}},
		{"required=%20A%20,!B", 22, [][]string{{"A"}}, []string{"B"}},
	} {
		r := httptest.NewRequest("GET", "/resource_providers?"+tc.query, nil)
		r = atVersion(r, tc.minor)
		req, forb, detail := normalizeRequiredTraits(r, "")
		if detail != "" || !reflect.DeepEqual(req, tc.required) || !reflect.DeepEqual(forb, tc.forbidden) {
			t.Errorf("%s @1.%d: got %v %v %q", tc.query, tc.minor, req, forb, detail)
		}
	}
}

func TestNormalizeMemberOf(t *testing.T) {
	r := httptest.NewRequest("GET", "/x?member_of=in:"+rpAgg1+","+rpAgg2+","+rpAgg1+"&member_of=!"+rpAgg2+"&member_of=!in:"+rpAgg1+","+rpAgg2, nil)
	r = atVersion(r, 32)
	req, forb, detail := normalizeMemberOf(r, "")
	if detail != "" || !reflect.DeepEqual(req, [][]string{{rpAgg1, rpAgg2}}) || !reflect.DeepEqual(forb, []string{rpAgg2, rpAgg1}) {
		t.Errorf("got %v %v %q", req, forb, detail)
	}
	r = httptest.NewRequest("GET", "/x?member_of1=a&member_of1=b", nil)
	r = atVersion(r, 23)
	if _, _, detail := normalizeMemberOf(r, "1"); detail != "Multiple member_of1 parameters are not supported" {
		t.Errorf("suffix detail %q", detail)
	}
}

func TestNormalizeResources(t *testing.T) {
	got, detail := normalizeResources("VCPU:2,DISK_GB: +1_0 ,VCPU:3")
	want := []state.ResourceAmount{{Class: "VCPU", Amount: 3}, {Class: "DISK_GB", Amount: 10}}
	if detail != "" || !reflect.DeepEqual(got, want) {
		t.Errorf("got %v %q", got, detail)
	}
	for qs, want := range map[string]string{
		"VCPU:1_":   "Requested resource VCPU expected positive integer amount. Got: 1_.",
		"VCPU:0":    "Requested resource VCPU requires amount >= 1. Got: 0.",
		"VCPU:-0":   "Requested resource VCPU requires amount >= 1. Got: 0.",
		"VCPU:1:2":  "Badly formed resources parameter. Expected resources query string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: VCPU:1:2.",
		"  ":        "Badly formed resources parameter. Expected resources query string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.",
		"VCPU:1,,":  "Badly formed resources parameter. Expected resources query string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: .",
		"VCPU:1.5":  "Requested resource VCPU expected positive integer amount. Got: 1.5.",
		"VCPU:--1":  "Requested resource VCPU expected positive integer amount. Got: --1.",
		"VCPU: -3 ": "Requested resource VCPU requires amount >= 1. Got: -3.",
	} {
		if _, detail := normalizeResources(qs); detail != want {
			t.Errorf("%q: got %q, want %q", qs, detail, want)
		}
	}
}

// A parameter repeated ten thousand times is read once, with every value
// kept in order; a bad value among them is reported as before.
func TestManyMemberOf(t *testing.T) {
	var q strings.Builder
	q.WriteString("resources=VCPU:1")
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&q, "&member_of=%08d-0000-4000-8000-000000000000&member_of1=!in:%08d-0000-4000-8000-000000000000", i, i%10)
	}
	q.WriteString("&resources1=VCPU:1&group_policy=none")
	r := httptest.NewRequest("GET", "/allocation_candidates?"+q.String(), nil)
	r = atVersion(r, 39)
	req, perr := parseCandidateRequest(r)
	if perr != nil {
		t.Fatal(perr.detail)
	}
	if len(req.Groups) != 2 || len(req.Groups[0].MemberOf) != 10000 || len(req.Groups[1].ForbiddenAggs) != 10 {
		t.Fatalf("groups %d, member_of %d, forbidden %d", len(req.Groups), len(req.Groups[0].MemberOf), len(req.Groups[1].ForbiddenAggs))
	}
	if got := req.Groups[0].MemberOf[9999][0]; got != "00009999-0000-4000-8000-000000000000" {
		t.Errorf("last member_of %s", got)
	}
	bad := httptest.NewRequest("GET", "/allocation_candidates?"+q.String()+"&member_of=nope", nil)
	bad = atVersion(bad, 39)
	if _, perr := parseCandidateRequest(bad); perr == nil || !strings.Contains(perr.detail, "Got: nope") {
		t.Errorf("bad value: %v", perr)
	}
}

// atVersion gives r the info the middleware gives a request negotiated at
// microversion 1.minor.
func atVersion(r *http.Request, minor int) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), infoKey{}, &reqInfo{version: &Version{1, minor}}))
}
