package candidates

import "github.com/placementd/placementd/fsm/state"

// generator yields the combinations of a layout one at a time (nil when
// there are no more, or the search was stopped), so that the search does
// only the work the answer needs. Where the anchors come from is the
// caller's: in ID order, or seeded from an index (anchorSource); a random
// order would give random candidates at the cost of the ones returned.
type generator interface {
	next() []*state.Provider
}

// combinations returns the generator of the configured strategy over the
// anchors that anchors yields.
func (s *search) combinations(lay *layout, anchors func() *state.Provider) generator {
	if s.opt.Strategy == BreadthFirst {
		return &breadthFirst{s: s, lay: lay, anchors: anchors}
	}
	return &depthFirst{s: s, lay: lay, anchors: anchors}
}

// depthFirst yields every combination of an anchor before the next
// anchor's.
type depthFirst struct {
	s       *search
	lay     *layout
	anchors func() *state.Provider
	it      *anchorIter
}

func (g *depthFirst) next() []*state.Provider {
	for {
		if g.it != nil && g.it.next() {
			return g.it.snapshot()
		}
		g.it = nil
		if g.s.err != nil {
			return nil
		}
		a := g.anchors()
		if a == nil {
			return nil
		}
		g.it = g.s.newIter(g.lay, a, false)
	}
}

// breadthFirst yields the first combination of every anchor in turn, then
// one more of each anchor that has one left, round after round.
type breadthFirst struct {
	s       *search
	lay     *layout
	anchors func() *state.Provider
	// filled is set once every anchor has given its first combination.
	filled bool
	// active are the anchors with combinations left, in anchor order;
	// pos is the next to ask in this round, and the first keep of active
	// are those that gave one in this round.
	active    []*anchorIter
	pos, keep int
}

func (g *breadthFirst) next() []*state.Provider {
	for !g.filled {
		if g.s.err != nil {
			return nil
		}
		a := g.anchors()
		if a == nil {
			g.filled = true
			g.keep = len(g.active)
			g.pos = g.keep
			break
		}
		it := g.s.newIter(g.lay, a, true)
		if it == nil || !it.next() {
			continue
		}
		g.active = append(g.active, it)
		return it.snapshot()
	}
	for len(g.active) > 0 {
		if g.pos == len(g.active) {
			g.active = g.active[:g.keep]
			g.pos, g.keep = 0, 0
			continue
		}
		it := g.active[g.pos]
		g.pos++
		if it.next() {
			g.active[g.keep] = it
			g.keep++
			return it.snapshot()
		}
		if g.s.err != nil {
			return nil
		}
	}
	return nil
}
