package state

import (
	"encoding/json"
	"testing"
)

// An image shares the store's consumers rather than copying them (a
// snapshot is written while commands go on being applied), so no command
// may change a stored consumer in place: what an image says stays what it
// said when it was taken.
func TestImageUnchangedByLaterWrites(t *testing.T) {
	s := New()
	alMust(t, s, &CreateResourceClass{Name: "CUSTOM_GPU"})
	alProvider(t, s, "rp1", "", alInv("VCPU", 8), alInv("CUSTOM_GPU", 4))
	alMust(t, s, alPut(alClaim("c1", "rp1", "VCPU", 2, "CUSTOM_GPU", 1)))
	alMust(t, s, alPut(alClaim("c2", "rp1", "VCPU", 1)))

	img := s.Image()
	before, err := json.Marshal(img)
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := img.Consumers[0], img.Consumers[1]
	if c1 != s.Consumers.Get("c1") {
		t.Fatal("the image copied the consumer: this test means to check the shared one")
	}

	rewrite := alClaim("c1", "rp1", "VCPU", 3)
	rewrite.ProjectID, rewrite.UserID = "other", "someone"
	alMust(t, s, alPut(rewrite))
	alMust(t, s, &RenameResourceClass{Name: "CUSTOM_GPU", NewName: "CUSTOM_ACCEL"})
	alMust(t, s, alPut(alClaim("c2", "rp1", "VCPU", 1, "CUSTOM_ACCEL", 2)))
	alMust(t, s, &DeleteConsumerAllocations{Consumer: "c2"})

	after, _ := json.Marshal(img)
	if string(after) != string(before) {
		t.Errorf("later writes changed the image:\nbefore %s\nafter  %s", before, after)
	}
	if s.Consumers.Get("c1") == c1 || c1.ProjectID != "proj" || c1.Allocations[1] != (Allocation{"rp1", "VCPU", 2}) || c2.Allocations[0].Used != 1 {
		t.Errorf("c1 %+v c2 %+v", c1, c2)
	}
	alCheckIndexes(t, s)
}
