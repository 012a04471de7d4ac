package image

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/placementd/placementd/fsm/state"
)

// decoder.consumer gives what json.Unmarshal gives, for what encodeImage
// writes and for anything else.
func TestDecodeConsumerMatchesEncodingJSON(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	words := []string{"", "p", "a3f1c0de-0000-4000-8000-000000000001", "VCPU", "ü-ñ", "<&>", `q"uote`, "back\\slash", "tab\t", "\u2028"}
	zones := []*time.Location{time.UTC, time.FixedZone("", 2*3600), time.FixedZone("X", -90*60)}
	word := func() string { return words[rnd.IntN(len(words))] }
	when := func() time.Time {
		if rnd.IntN(4) == 0 {
			return time.Time{}
		}
		return time.Unix(rnd.Int64N(4e9), rnd.Int64N(1e9)).In(zones[rnd.IntN(len(zones))])
	}
	fast := 0
	for i := 0; i < 2000; i++ {
		c := state.ConsumerImage{Consumer: state.Consumer{
			UUID: word(), ProjectID: word(), UserID: word(), Type: word(),
			Generation: rnd.Int64N(1<<40) - 5, Created: when(), Updated: when(),
		}}
		switch rnd.IntN(3) {
		case 0: // nil
		case 1:
			c.Allocations = []state.Allocation{}
		default:
			for k := rnd.IntN(4); k >= 0; k-- {
				c.Allocations = append(c.Allocations, state.Allocation{ProviderUUID: word(), Class: word(), Used: rnd.Int64N(1e6) - 3})
			}
		}
		raw, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		checkDecodeConsumer(t, raw)
		if _, ok := (&decoder{}).parseConsumer(raw); ok {
			fast++
		}
	}
	// Most random words need escapes, which go to encoding/json; plain
	// ones, as real uuids, classes and project ids are, are parsed.
	if fast < 20 {
		t.Errorf("the direct parse took only %d of 2000 consumers", fast)
	}
	plain := state.ConsumerImage{Consumer: state.Consumer{UUID: "u", ProjectID: "p", UserID: "x", Generation: 2,
		Created:     time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		Allocations: []state.Allocation{{ProviderUUID: "r", Class: "VCPU", Used: 2}}}}
	raw, _ := json.Marshal(&plain)
	if _, ok := (&decoder{}).parseConsumer(raw); !ok {
		t.Errorf("%s was left to encoding/json", raw)
	}
	// Snapshots written before allocations lost their own times still
	// take the direct parse.
	older := []byte(`{"UUID":"u","ProjectID":"p","UserID":"x","Type":"","Generation":1,"Created":"2026-01-02T03:04:05.000000006Z","Updated":"2026-01-02T03:04:05.000000006Z","Allocations":[{"ProviderUUID":"r","Class":"VCPU","Used":2,"Created":"2026-01-02T03:04:05.000000006Z","Updated":"0001-01-01T00:00:00Z"}]}`)
	if _, ok := (&decoder{}).parseConsumer(older); !ok {
		t.Errorf("%s was left to encoding/json", older)
	}
	checkDecodeConsumer(t, older)
	for _, doc := range []string{
		`{"UUID":"u","ProjectID":"p","UserID":"x","Type":"","Generation":1,"Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z","Allocations":[{"ProviderUUID":"r","Class":"VCPU","Used":2,"Created":"0001-01-01T00:00:00Z"}]}`,
		`{"UUID":"u"}`, `{"uuid":"u","Allocations":[{"class":"VCPU"}]}`, ` {"UUID":"u"} `, `{}`, `null`,
		`{"UUID":"u","ProjectID":"p","UserID":"x","Type":"","Generation":01,"Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z","Allocations":null}`,
		`{"UUID":"u","ProjectID":"p","UserID":"x","Type":"","Generation":1.5,"Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z","Allocations":null}`,
		`{"UUID":"u","ProjectID":"p","UserID":"x","Type":"","Generation":1,"Created":"yesterday","Updated":"0001-01-01T00:00:00Z","Allocations":null}`,
		`{"UUID":"u","ProjectID":"p","UserID":"x","Type":"","Generation":99999999999999999999,"Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z","Allocations":null}`,
		`{"UUID":"u","ProjectID":"p","UserID":"x","Type":"","Generation":1,"Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z","Allocations":[]}x`,
		"{\"UUID\":\"\xff\",\"ProjectID\":\"p\",\"UserID\":\"x\",\"Type\":\"\",\"Generation\":1,\"Created\":\"0001-01-01T00:00:00Z\",\"Updated\":\"0001-01-01T00:00:00Z\",\"Allocations\":null}",
	} {
		checkDecodeConsumer(t, []byte(doc))
	}
}

func checkDecodeConsumer(t *testing.T, raw []byte) {
	t.Helper()
	checkDecoded(t, raw, (&decoder{}).consumer)
}

// checkDecoded requires decode to give what json.Unmarshal gives for raw.
func checkDecoded[T any](t *testing.T, raw []byte, decode func([]byte) (T, error)) {
	t.Helper()
	var want T
	wantErr := json.Unmarshal(raw, &want)
	got, err := decode(raw)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: error %v, encoding/json's %v", raw, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %s\nwant %s", raw, fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", want))
	}
}

// A consumer's project, user and allocations' providers are the strings
// decoded before (an allocation's provider uuid its provider's own), not
// copies per consumer.
func TestDecodedConsumersShareNames(t *testing.T) {
	var d decoder
	p, err := d.provider([]byte(`{"ID":1,"UUID":"r","Name":"n","Generation":0,"RootUUID":"r","Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z","Inventories":null}`))
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(`{"UUID":"u%d","ProjectID":"p","UserID":"x","Type":"","Generation":1,"Created":"2026-01-02T03:04:05Z","Updated":"2026-01-02T03:04:05Z","Allocations":[{"ProviderUUID":"r","Class":"VCPU","Used":2}]}`)
	a, err1 := d.consumer([]byte(fmt.Sprintf(string(raw), 1)))
	b, err2 := d.consumer([]byte(fmt.Sprintf(string(raw), 2)))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if unsafeData(a.ProjectID) != unsafeData(b.ProjectID) || unsafeData(a.UserID) != unsafeData(b.UserID) ||
		unsafeData(a.Allocations[0].Class) != unsafeData(b.Allocations[0].Class) {
		t.Errorf("repeated names were decoded into separate copies")
	}
	if unsafeData(a.Allocations[0].ProviderUUID) != unsafeData(p.UUID) || unsafeData(b.Allocations[0].ProviderUUID) != unsafeData(p.UUID) {
		t.Errorf("an allocation's provider uuid is not its provider's string")
	}
}
