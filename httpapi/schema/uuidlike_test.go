package schema

import "testing"

func TestUUIDLike(t *testing.T) {
	for s, want := range map[string]string{
		"2290d4af-9e6e-400b-9d65-1ee01376f71a":            "2290d4af9e6e400b9d651ee01376f71a",
		"2290D4AF9E6E400B9D651EE01376F71A":                "2290d4af9e6e400b9d651ee01376f71a",
		"urn:uuid:{2290d4af-9e6e-400b-9d65-1ee01376f71a}": "2290d4af9e6e400b9d651ee01376f71a",
		"2290d4af-9e6e-400b-9d65-1ee01376f71":             "",
		"2290d4af-9e6e-400b-9d65-1ee01376f71g":            "",
		"+290d4af9e6e400b9d651ee01376f71a":                "",
		"":                                                "",
	} {
		if got := UUIDLikeHex(s); got != want {
			t.Errorf("UUIDLikeHex(%q) = %q, want %q", s, got, want)
		}
	}
	body := MustCompileBody(`{"type": "array", "items": {"anyOf": [{"type": "string", "format": "uuid"}]}}`)
	query := MustCompile(`{"type": "array", "items": {"anyOf": [{"type": "string", "format": "uuid"}]}}`)
	dashless := []any{"2290d4af9e6e400b9d651ee01376f71a"}
	if err := body.Validate(dashless); err != nil {
		t.Errorf("body schema refused a dashless uuid: %v", err)
	}
	if err := query.Validate(dashless); err == nil {
		t.Errorf("query schema accepted a dashless uuid")
	}
	if err := body.Validate([]any{"nope"}); err == nil {
		t.Errorf("body schema accepted nope")
	}
}
