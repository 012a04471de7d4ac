package candidates

import (
	"sync"
	"unsafe"

	"github.com/placementd/placementd/fsm/state"
)

// answerMem is the memory an answer is built in: the combinations, the
// candidates and the summaries. It is kept between searches
// (Result.Release), so that an ordinary request allocates none of it: a
// limit-50 answer is some 30 KB, which at thousands of requests a second
// made most of a node's garbage, and the collections that came with it
// the most frequent cause of slow requests.
type answerMem struct {
	combos     arena[*state.Provider]
	all        [][]*state.Provider
	candidates arena[Candidate]
	allocs     arena[Allocation]
	amounts    arena[state.ResourceAmount]
	mappings   arena[Mapping]
	uuids      arena[string]
	summaries  arena[Summary]
	resources  arena[SummaryResource]
	traits     arena[string]
	// Scratch of summaries.
	roots    map[string]bool
	rootList []*state.Provider
	provs    []*state.Provider
	classes  []string
	classIDs map[string]int
}

// keptAnswerBytes bounds the memory a kept answerMem may hold: larger
// answers (thousands of candidates) are left to the collector, as the
// response buffers they are rendered into.
const keptAnswerBytes = 4 << 20

var answerMems = sync.Pool{New: func() any { return &answerMem{roots: map[string]bool{}, classIDs: map[string]int{}} }}

func newAnswerMem() *answerMem { return answerMems.Get().(*answerMem) }

// release clears what m holds (no version of the state stays reachable
// from it) and keeps it for the next search, unless it grew too large.
func (m *answerMem) release() {
	size := m.combos.reset() + m.candidates.reset() + m.allocs.reset() + m.amounts.reset() +
		m.mappings.reset() + m.uuids.reset() + m.summaries.reset() + m.resources.reset() + m.traits.reset()
	clear(m.all[:cap(m.all)])
	m.all = m.all[:0]
	clear(m.rootList[:cap(m.rootList)])
	m.rootList = m.rootList[:0]
	clear(m.provs[:cap(m.provs)])
	m.provs = m.provs[:0]
	clear(m.classes[:cap(m.classes)])
	m.classes = m.classes[:0]
	clear(m.roots)
	clear(m.classIDs)
	size += cap(m.all)*int(unsafe.Sizeof([]*state.Provider(nil))) + (cap(m.rootList)+cap(m.provs))*8 + cap(m.classes)*16
	if size <= keptAnswerBytes {
		answerMems.Put(m)
	}
}

// arena hands out slices cut from one array, kept from one answer to the
// next.
type arena[T any] struct{ buf []T }

// take returns n zero elements, with no room to grow into the next ones.
// When the array is short, a new one at least as large replaces it (the
// slices already handed out keep the old one): an answer takes each kind
// of slice at once, but for its combinations, which come in slabs of a
// few hundred.
func (a *arena[T]) take(n int) []T {
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]T, 0, max(cap(a.buf), n))
	}
	l := len(a.buf)
	a.buf = a.buf[:l+n]
	return a.buf[l : l+n : l+n]
}

// reset zeroes what was handed out, takes it back and returns the bytes
// the array holds.
func (a *arena[T]) reset() int {
	clear(a.buf)
	a.buf = a.buf[:0]
	var zero T
	return cap(a.buf) * int(unsafe.Sizeof(zero))
}
