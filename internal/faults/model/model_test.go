package model

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

const (
	rpA, rpB = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
	c1, c2   = "c1111111-0000-4000-8000-000000000001", "c2222222-0000-4000-8000-000000000002"
)

// capacity: 4 VCPU on each provider.
func capacity(provider, class string) int64 { return 4 }

func gen(n int64) *int64 { return &n }

func put(c string, g *int64, rp string, vcpu int64) Input {
	w := ConsumerWrite{Consumer: c, Generation: g}
	if vcpu > 0 {
		w.Allocations = []Amount{{rp, "VCPU", vcpu}}
	}
	return Input{Kind: PutAllocations, Writes: []ConsumerWrite{w}}
}

func readConsumer(c string) Input { return Input{Kind: ReadConsumer, Consumer: c} }
func readUsages(rp string) Input  { return Input{Kind: ReadUsages, Provider: rp} }

func ok() Output             { return Output{Result: OK} }
func result(r Result) Output { return Output{Result: r} }
func unknown() Output        { return Output{Result: Unknown} }
func usages(rp string, n int64) Output {
	if n == 0 {
		return Output{Result: OK}
	}
	return Output{Result: OK, Usages: []Amount{{rp, "VCPU", n}}}
}
func consumerRead(g int64, rp string, n int64) Output {
	if n == 0 {
		return Output{Result: OK, Generation: -1}
	}
	return Output{Result: OK, Generation: g, Allocations: []Amount{{rp, "VCPU", n}}}
}

// op is one operation: client, times, input and output.
func op(client int, call, ret int64, in Input, out Output) porcupine.Operation {
	if out.Result == Unknown {
		ret = 1 << 62
	}
	return porcupine.Operation{ClientId: client, Call: call, Return: ret, Input: in, Output: out}
}

func move(c1Gen int64, c2Gen int64) Input {
	return Input{Kind: PostAllocations, Writes: []ConsumerWrite{
		{Consumer: c1, Generation: gen(c1Gen), Allocations: []Amount{{rpB, "VCPU", 2}}},
		{Consumer: c2, Generation: gen(c2Gen), Allocations: []Amount{{rpB, "VCPU", 2}}},
	}}
}

func TestLinearizableHistories(t *testing.T) {
	for name, history := range map[string][]porcupine.Operation{
		"sequential claims, reads and a delete": {
			op(0, 0, 10, put(c1, nil, rpA, 2), ok()),
			op(0, 11, 20, readConsumer(c1), consumerRead(1, rpA, 2)),
			op(0, 21, 30, put(c1, gen(1), rpA, 3), ok()),
			op(0, 31, 40, readUsages(rpA), usages(rpA, 3)),
			op(0, 41, 50, put(c2, nil, rpA, 2), result(CapacityConflict)),
			op(0, 51, 60, put(c2, gen(1), rpA, 1), result(GenerationConflict)),
			op(0, 61, 70, Input{Kind: DeleteAllocations, Consumer: c1}, ok()),
			op(0, 71, 80, Input{Kind: DeleteAllocations, Consumer: c1}, result(NotFound)),
			op(0, 81, 90, readConsumer(c1), consumerRead(0, "", 0)),
			op(0, 91, 100, put(c1, nil, rpA, 4), ok()),
		},
		"concurrent claims: one of two fits, either may win": {
			op(0, 0, 100, put(c1, nil, rpA, 3), result(CapacityConflict)),
			op(1, 10, 50, put(c2, nil, rpA, 3), ok()),
			op(2, 60, 70, readUsages(rpA), usages(rpA, 3)),
		},
		"a read concurrent with a write sees it or not": {
			op(0, 0, 100, put(c1, nil, rpA, 2), ok()),
			op(1, 10, 20, readUsages(rpA), usages(rpA, 2)),
			op(2, 30, 40, readUsages(rpA), usages(rpA, 2)),
		},
		"a move of two consumers at once": {
			op(0, 0, 10, put(c1, nil, rpA, 2), ok()),
			op(0, 11, 20, put(c2, nil, rpA, 2), ok()),
			op(0, 21, 60, move(1, 1), ok()),
			op(1, 30, 40, readUsages(rpB), usages(rpB, 0)),
			op(1, 41, 50, readUsages(rpA), usages(rpA, 0)),
			op(1, 61, 70, readConsumer(c2), consumerRead(2, rpB, 2)),
		},
		"an unknown write seen later": {
			op(0, 0, 10, put(c1, nil, rpA, 2), unknown()),
			op(1, 20, 30, readConsumer(c1), consumerRead(1, rpA, 2)),
		},
		"an unknown write never applied": {
			op(0, 0, 10, put(c1, nil, rpA, 2), unknown()),
			op(1, 20, 30, readConsumer(c1), consumerRead(0, "", 0)),
			op(1, 40, 50, put(c1, nil, rpA, 1), ok()),
			op(1, 60, 70, readUsages(rpA), usages(rpA, 1)),
		},
	} {
		if res := porcupine.CheckOperations(Model(capacity), history); !res {
			t.Errorf("%s: judged not linearizable", name)
		}
	}
}

// TestNonLinearizableHistories: the checker must be able to fail, for each
// way the harness looks for.
func TestNonLinearizableHistories(t *testing.T) {
	for name, history := range map[string][]porcupine.Operation{
		"stale read: an acknowledged claim not seen by a later read": {
			op(0, 0, 10, put(c1, nil, rpA, 2), ok()),
			op(1, 20, 30, readConsumer(c1), consumerRead(0, "", 0)),
		},
		"lost write: usage drops back after an acknowledged claim": {
			op(0, 0, 10, put(c1, nil, rpA, 2), ok()),
			op(1, 20, 30, readUsages(rpA), usages(rpA, 2)),
			op(1, 40, 50, readUsages(rpA), usages(rpA, 0)),
		},
		"over-allocation: two claims that cannot both fit both succeed": {
			op(0, 0, 10, put(c1, nil, rpA, 3), ok()),
			op(1, 5, 15, put(c2, nil, rpA, 3), ok()),
		},
		"generation reused: two writes at the same consumer generation": {
			op(0, 0, 10, put(c1, nil, rpA, 1), ok()),
			op(0, 20, 30, put(c1, gen(1), rpA, 2), ok()),
			op(1, 40, 50, put(c1, gen(1), rpA, 3), ok()),
		},
		"a move seen half done": {
			op(0, 0, 10, put(c1, nil, rpA, 2), ok()),
			op(0, 11, 20, put(c2, nil, rpA, 2), ok()),
			op(0, 21, 60, move(1, 1), ok()),
			op(1, 30, 40, readUsages(rpB), usages(rpB, 2)),
			op(1, 41, 50, readUsages(rpA), usages(rpA, 4)),
		},
		"an unknown write seen, then unseen": {
			op(0, 0, 10, put(c1, nil, rpA, 2), unknown()),
			op(1, 20, 30, readConsumer(c1), consumerRead(1, rpA, 2)),
			op(1, 40, 50, readConsumer(c1), consumerRead(0, "", 0)),
		},
		"a refused write that took effect": {
			op(0, 0, 10, put(c1, nil, rpA, 3), ok()),
			op(0, 20, 30, put(c2, nil, rpA, 2), result(CapacityConflict)),
			op(1, 40, 50, readUsages(rpA), usages(rpA, 5)),
		},
	} {
		if res := porcupine.CheckOperations(Model(capacity), history); res {
			t.Errorf("%s: judged linearizable", name)
		}
	}
}

// TestPartitionedByGroup: groups are checked apart, and a violation in one
// group fails the whole history.
func TestPartitionedByGroup(t *testing.T) {
	in := func(g int, i Input) Input { i.Group = g; return i }
	good := []porcupine.Operation{
		op(0, 0, 10, in(1, put(c1, nil, rpA, 2)), ok()),
		op(1, 0, 10, in(2, put(c1, nil, rpA, 4)), ok()),
		op(0, 20, 30, in(1, readUsages(rpA)), usages(rpA, 2)),
		op(1, 20, 30, in(2, readUsages(rpA)), usages(rpA, 4)),
	}
	if !porcupine.CheckOperations(Model(capacity), good) {
		t.Error("independent groups judged not linearizable")
	}
	bad := append(good, op(2, 40, 50, in(2, readUsages(rpA)), usages(rpA, 2)))
	if porcupine.CheckOperations(Model(capacity), bad) {
		t.Error("a stale read in one group went unnoticed")
	}
}

func TestApplyKeepsEmptyNewConsumer(t *testing.T) {
	// As fsm/state: a new consumer given no allocations stays, at
	// generation 0, so the next write must give generation 0.
	out, s := Apply(State{}, put(c1, nil, rpA, 0), capacity)
	if out.Result != OK {
		t.Fatal(out)
	}
	if out, _ := Apply(s, put(c1, nil, rpA, 1), capacity); out.Result != GenerationConflict {
		t.Errorf("write expecting no consumer: %v", out.Result)
	}
	out, s = Apply(s, put(c1, gen(0), rpA, 1), capacity)
	if out.Result != OK {
		t.Fatal(out)
	}
	if out, _ := Apply(s, readConsumer(c1), capacity); out.Generation != 1 {
		t.Errorf("generation %d after the first allocation", out.Generation)
	}
}
