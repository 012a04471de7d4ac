package image

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/placementd/placementd/fsm/state"
)

// decoder.provider gives what json.Unmarshal gives, for what encodeImage
// writes and for anything else, and shares one copy of repeated names.
func TestDecodeProviderMatchesEncodingJSON(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	words := []string{"", "p", "a3f1c0de-0000-4000-8000-000000000001", "VCPU", "COMPUTE_NET_VIF_MODEL_E1000", "ü-ñ", "<&>", `q"uote`, "back\\slash", "\u2028"}
	ratios := []float64{0, 1, 1.5, 16, 0.1, 1e21, 1e-7, math.MaxFloat64, 3.0000000000000004}
	word := func() string { return words[rnd.IntN(len(words))] }
	when := func() time.Time {
		if rnd.IntN(4) == 0 {
			return time.Time{}
		}
		return time.Unix(rnd.Int64N(4e9), rnd.Int64N(1e9)).In(time.FixedZone("", 3600*(rnd.IntN(5)-2)))
	}
	list := func() []string {
		var out []string
		for k := rnd.IntN(5) - 1; k >= 0; k-- {
			out = append(out, word())
		}
		return out
	}
	var d decoder
	fast := 0
	for i := 0; i < 2000; i++ {
		p := state.ProviderImage{ID: rnd.Int64N(1<<40) - 3, UUID: word(), Name: word(), Generation: rnd.Int64N(100),
			ParentUUID: word(), RootUUID: word(), Created: when(), Updated: when(), Traits: list(), Aggregates: list()}
		if rnd.IntN(3) > 0 {
			p.Inventories = []state.InventoryImage{}
			for k := rnd.IntN(4); k > 0; k-- {
				p.Inventories = append(p.Inventories, state.InventoryImage{Class: word(), Inventory: state.Inventory{
					Total: rnd.Int64N(1 << 40), Reserved: rnd.Int64N(9), MinUnit: 1, MaxUnit: rnd.Int64N(1 << 20), StepSize: 1,
					AllocationRatio: ratios[rnd.IntN(len(ratios))], Created: when(), Updated: when()}})
			}
		}
		raw, err := json.Marshal(&p)
		if err != nil {
			t.Fatal(err)
		}
		checkDecoded(t, raw, d.provider)
		if _, ok := d.parseProvider(raw); ok {
			fast++
		}
	}
	if fast < 20 {
		t.Errorf("the direct parse took only %d of 2000 providers", fast)
	}

	plain := state.ProviderImage{ID: 7, UUID: "u", Name: "cn1", RootUUID: "u", Created: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		Inventories: []state.InventoryImage{{Class: "VCPU", Inventory: state.Inventory{Total: 8, MinUnit: 1, MaxUnit: 8, StepSize: 1, AllocationRatio: 16}}},
		Traits:      []string{"COMPUTE_A", "HW_B"}, Aggregates: []string{"agg"}}
	raw, _ := json.Marshal(&plain)
	a, ok1 := d.parseProvider(raw)
	b, ok2 := d.parseProvider(raw)
	if !ok1 || !ok2 {
		t.Fatalf("%s was left to encoding/json", raw)
	}
	if unsafeData(a.Traits[0]) != unsafeData(b.Traits[0]) || unsafeData(a.Inventories[0].Class) != unsafeData(b.Inventories[0].Class) {
		t.Errorf("repeated names were decoded into separate copies")
	}
	for _, doc := range []string{
		`{"ID":1}`, `{}`, `null`, ` {"ID":1,"UUID":"u"} `,
		`{"ID":1,"UUID":"u","Name":"n","Generation":0,"RootUUID":"u","Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z","Inventories":[{"Class":"VCPU","Total":1,"Reserved":0,"MinUnit":1,"MaxUnit":1,"StepSize":1,"AllocationRatio":01,"Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z"}]}`,
		`{"ID":1,"UUID":"u","Name":"n","Generation":0,"RootUUID":"u","Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z","Inventories":[{"Class":"VCPU","Total":1,"Reserved":0,"MinUnit":1,"MaxUnit":1,"StepSize":1,"AllocationRatio":1.,"Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z"}]}`,
		`{"ID":1,"UUID":"u","Name":"n","Generation":0,"RootUUID":"u","Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z","Inventories":[{"Class":"VCPU","Total":1,"Reserved":0,"MinUnit":1,"MaxUnit":1,"StepSize":1,"AllocationRatio":1e400,"Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z"}]}`,
		`{"ID":1,"UUID":"u","Name":"n","Generation":0,"RootUUID":"u","Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z","Inventories":null,"Traits":["A",]}`,
		`{"ID":1,"UUID":"u","Name":"n","Generation":0,"RootUUID":"u","Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z","Inventories":null,"Traits":[]}x`,
		`{"ID":1,"UUID":"u","Name":"n","Generation":0,"RootUUID":"u","Created":"0001-01-01T00:00:00Z","Updated":"0001-01-01T00:00:00Z","Inventories":null,"Aggregates":["a"],"Traits":["t"]}`,
	} {
		checkDecoded(t, []byte(doc), d.provider)
	}
}

func unsafeData(s string) *byte {
	if s == "" {
		return nil
	}
	return unsafe.StringData(s)
}
