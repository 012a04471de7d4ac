package httpapi

import "testing"

func TestResourceClassesAPI(t *testing.T) {
	a := newTestAPI(t, Config{})
	st, _, body := a.do("POST", "/resource_classes", "1.2", map[string]any{"name": "FOO"})
	// The message quotes upstream's CUSTOM_RC_PATTERN as it is.
	invCheck(t, "bad name", st, body, 400, `JSON does not validate: 'FOO' does not match '^CUSTOM_[A-Z0-9_]+$'`)
	st, h, body := a.do("POST", "/resource_classes", "1.2", map[string]any{"name": "CUSTOM_GOLD"})
	invCheck(t, "create", st, body, 201)
	if h.Get("Location") != a.URL+"/resource_classes/CUSTOM_GOLD" {
		t.Fatalf("location %q", h.Get("Location"))
	}
	st, _, body = a.do("POST", "/resource_classes", "1.2", map[string]any{"name": "CUSTOM_GOLD"})
	invCheck(t, "again", st, body, 409, "Conflicting resource class already exists: CUSTOM_GOLD")
	st, h, body = a.do("PUT", "/resource_classes/CUSTOM_SILVER", "1.7", nil)
	invCheck(t, "put create", st, body, 201)
	if h.Get("Location") != a.URL+"/resource_classes/CUSTOM_SILVER" {
		t.Fatalf("location %q", h.Get("Location"))
	}
	st, _, body = a.do("PUT", "/resource_classes/CUSTOM_SILVER", "1.7", nil)
	invCheck(t, "put exists", st, body, 204)

	// A class with inventory cannot be deleted.
	rp := invProvider(t, a, "rc-rp")
	st, _, body = a.do("POST", "/resource_providers/"+rp+"/inventories", "1.2",
		map[string]any{"resource_class": "CUSTOM_GOLD", "total": 1})
	invCheck(t, "inventory", st, body, 201)
	st, _, body = a.do("DELETE", "/resource_classes/CUSTOM_GOLD", "1.2", nil)
	invCheck(t, "delete in use", st, body, 409, "Cannot delete resource class CUSTOM_GOLD. Class is in use in inventory.")
	// Renaming carries the inventory along.
	st, _, body = a.do("PUT", "/resource_classes/CUSTOM_GOLD", "1.6", map[string]any{"name": "CUSTOM_PLATINUM"})
	invCheck(t, "rename", st, body, 200)
	st, _, body = a.do("GET", "/resource_providers/"+rp+"/inventories", "1.2", nil)
	if st != 200 || invField(body, "inventories", "CUSTOM_PLATINUM", "total") != 1.0 {
		t.Fatalf("after rename: %d %v", st, body)
	}
	st, _, body = a.do("DELETE", "/resource_providers/"+rp+"/inventories/CUSTOM_PLATINUM", "1.2", nil)
	invCheck(t, "delete inventory", st, body, 204)
	st, _, body = a.do("DELETE", "/resource_classes/CUSTOM_PLATINUM", "1.2", nil)
	invCheck(t, "delete class", st, body, 204)
	st, _, body = a.do("GET", "/resource_classes/CUSTOM_PLATINUM", "1.2", nil)
	invCheck(t, "gone", st, body, 404, "No such resource class CUSTOM_PLATINUM.")
}
