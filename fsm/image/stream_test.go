package image

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/placementd/placementd/fsm/state"
)

// streamImages are images with every slice nil, empty and full, and
// strings encoding/json escapes.
func streamImages() []*state.Image {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	full := &state.Image{
		LastIndex: 42, NextProviderID: 3, NextClassID: 10001, NextConsumerTypeID: 2,
		Providers: []state.ProviderImage{
			{ID: 1, UUID: "11111111-1111-1111-1111-111111111111", Name: "cn<1>&\"é\u2028", Generation: 3, RootUUID: "11111111-1111-1111-1111-111111111111",
				Created: at, Updated: at, Traits: []string{"CUSTOM_T"}, Aggregates: []string{"a"},
				Inventories: []state.InventoryImage{{Class: "VCPU", Inventory: state.Inventory{Total: 8, MaxUnit: 8, StepSize: 1, MinUnit: 1, AllocationRatio: 16, Created: at}}}},
			{ID: 2, UUID: "22222222-2222-2222-2222-222222222222", Name: "child", ParentUUID: "11111111-1111-1111-1111-111111111111", RootUUID: "11111111-1111-1111-1111-111111111111"},
		},
		CustomClasses: []state.ResourceClass{{ID: 10000, Name: "CUSTOM_A", Created: at}},
		CustomTraits:  []state.Trait{{Name: "CUSTOM_T"}},
		ConsumerTypes: []state.ConsumerType{{ID: 1, Name: "INSTANCE"}},
		Consumers: []*state.Consumer{{UUID: "c", ProjectID: "p", UserID: "u", Generation: 1,
			Allocations: []state.Allocation{{ProviderUUID: "11111111-1111-1111-1111-111111111111", Class: "VCPU", Used: 2}}}},
	}
	empty := &state.Image{Providers: []state.ProviderImage{}, Consumers: []*state.Consumer{}}
	return []*state.Image{full, empty, {}}
}

// The streamed encoding is byte for byte encoding/json's, so that digests
// and snapshots of earlier builds compare equal.
func TestEncodeImageMatchesEncodingJSON(t *testing.T) {
	for i, img := range streamImages() {
		var want, got bytes.Buffer
		if err := json.NewEncoder(&want).Encode(img); err != nil {
			t.Fatal(err)
		}
		if err := encodeImage(&got, img); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("image %d:\n got %s\nwant %s", i, got.String(), want.String())
		}
	}
}

// decodeImage reads what encoding/json would, including keys in another
// case, unknown keys and nulls.
func TestDecodeImageMatchesEncodingJSON(t *testing.T) {
	var docs []string
	for _, img := range streamImages() {
		b, _ := json.Marshal(img)
		docs = append(docs, string(b))
	}
	docs = append(docs,
		`{"lastindex": 7, "Unknown": {"x": [1, 2]}, "PROVIDERS": null, "Consumers": [{"UUID": "c", "Allocations": null}], "Consumers": []}`,
		`{"LastIndex": null, "CustomTraits": [{"Name": "CUSTOM_X", "Standard": false}]}`,
		`{"Consumers": null, "LastIndex": 3}`,
		`{"Consumers" : [ ] , "lastINDEX": 4 , "Consumers": [ {"UUID": "a b,]}\"", "Allocations": [{"Used": 1}]} , null ]}`,
		`{"Consumers":[{"UUID":"u","ProjectID":"p","UserID":"x","Type":"","Generation":1,"Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z","Allocations":[]}]}`)
	for _, doc := range docs {
		var want state.Image
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeImage(bytes.NewReader([]byte(doc)))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", doc, *got, want)
		}
	}
	for _, bad := range []string{`[]`, `{"Providers": {}}`, `{"Providers": [1]}`, `{"LastIndex": "x"}`, `{"Consumers": [`,
		`{"Consumers": [1]}`, `{"Consumers": [{},]}`, `{"Consumers": [,{}]}`, `{"Consumers": nul}`, `{"Consumers": {}}`,
		`{"Consumers": [{"UUID": "x}]}`, `{"Consumers": [{}] "LastIndex": 1}`, `{"Consumers": []`, `{"Consumers": [{} {}]}`} {
		if _, err := decodeImage(bytes.NewReader([]byte(bad))); err == nil {
			t.Errorf("%s: decoded without error", bad)
		}
	}
}

// Arrays longer than one batch of the delimiter (delimitElements) decode
// whole and in order, escapes included, and a damaged element after the
// first batches is an error, not a hang.
func TestDecodeImageAcrossBatches(t *testing.T) {
	img := &state.Image{}
	for i := range 3 * batchBytes / 100 {
		img.Consumers = append(img.Consumers, &state.Consumer{UUID: fmt.Sprintf("c%07d \"]}\\", i), ProjectID: "p", UserID: "u",
			Allocations: []state.Allocation{{ProviderUUID: "r", Class: "VCPU", Used: int64(i + 1)}}})
	}
	doc, err := json.Marshal(img)
	if err != nil {
		t.Fatal(err)
	}
	var want state.Image
	if err := json.Unmarshal(doc, &want); err != nil {
		t.Fatal(err)
	}
	got, err := decodeImage(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Fatal("decoded image differs from encoding/json's")
	}
	for _, damage := range []string{`"Used":1000}`, `"UUID":`} {
		at := bytes.LastIndex(doc, []byte(damage))
		bad := append(append(append([]byte{}, doc[:at]...), "x"...), doc[at+1:]...)
		if _, err := decodeImage(bytes.NewReader(bad)); err == nil {
			t.Errorf("damage at byte %d of %d (%s): decoded without error", at, len(doc), damage)
		}
	}
}
