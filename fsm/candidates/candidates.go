package candidates

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/placementd/placementd/fsm/state"
)

// Group is one request group, already parsed and validated for syntax.
type Group struct {
	// Suffix is "" for the unsuffixed group, whose resources may come from
	// several providers of one tree and from sharing providers; a suffixed
	// (granular) group must be satisfied by a single provider.
	Suffix string
	// Resources in query order (a class at most once).
	Resources []state.ResourceAmount
	// Required is an AND of ORs of trait names.
	Required [][]string
	// Forbidden traits: no provider serving the group may have one.
	Forbidden []string
	// MemberOf is an AND of ORs of aggregate uuids.
	MemberOf [][]string
	// ForbiddenAggs: no provider serving the group may be in one.
	ForbiddenAggs []string
	// InTree is a provider uuid whose tree must serve the group, or "".
	InTree string
}

// Request is a whole GET /allocation_candidates query.
type Request struct {
	// Groups in the order their first parameter appears in the query.
	Groups []Group
	// Isolate is group_policy=isolate: granular groups use distinct
	// providers.
	Isolate bool
	// RootRequired and RootForbidden are root_required's traits: the root
	// of each candidate's tree must have all the first and none of the
	// second.
	RootRequired  []string
	RootForbidden []string
	// SameSubtrees lists sets of granular suffixes whose providers must all
	// sit under one of them.
	SameSubtrees [][]string
	// Limit is the maximum number of candidates returned; 0 for no limit.
	Limit int
	// NestedAware is false before microversion 1.29: candidates using two
	// providers of one tree are dropped and summaries list only the
	// providers used.
	NestedAware bool
}

// Strategy is the order in which candidates of different roots are
// generated (allocation_candidates_generation_strategy).
type Strategy int

const (
	// DepthFirst generates every candidate of one root before the next.
	DepthFirst Strategy = iota
	// BreadthFirst takes one candidate of each root in turn.
	BreadthFirst
)

// Options are the service's settings for the search.
type Options struct {
	// Randomize returns a random sample (limit) or a shuffle of the
	// candidates instead of the first ones in generation order.
	Randomize bool
	// Rand is the source for Randomize; nil uses the global one.
	Rand *rand.Rand
	// MaxCandidates bounds how many candidates are generated at all
	// (max_allocation_candidates); 0 or less means no bound.
	MaxCandidates int
	Strategy      Strategy
	// MaxBytes bounds the memory the answer may take while it is built
	// and sent (an estimate: see cellBytes); a search that would need
	// more stops with a *LimitError. 0 or less means no bound.
	MaxBytes int64
	// Budget, when set, is memory shared with the other searches running
	// at once (and with their answers until they are sent): the search
	// takes what it estimates it holds from it as it grows, in chunks of
	// at least BudgetChunk, and stops with ErrBusy when the budget has no
	// more. A successful search leaves what it took in Result.Taken for
	// the caller to give back once the answer is sent; a failed one gives
	// it back itself.
	Budget Budget
	// Taken is what the caller already took from Budget for this search
	// (its first share, for which it may wait), counted as the search's.
	Taken int64
}

// Budget is memory shared by concurrent searches (httpguard.Admission
// over the node's --max-answer-mb).
type Budget interface {
	// TryTake takes n bytes if they are free, without waiting.
	TryTake(n int64) bool
	// Give returns n bytes taken before.
	Give(n int64)
}

// BudgetChunk is the least a search takes from Options.Budget at a time,
// so that a search's growth costs few calls on the shared budget.
const BudgetChunk = 256 << 10

// ErrBusy: Options.Budget had no room for the search to go on (other
// searches and unsent answers hold it); the search may succeed later.
var ErrBusy = errors.New("the memory for allocation candidate searches is taken by other searches")

// Candidate is one allocation request.
type Candidate struct {
	// Allocations by provider, in the order providers are first used.
	Allocations []Allocation
	// Mappings from each group's suffix to the providers serving it, in
	// group order.
	Mappings []Mapping
}

// Allocation is what one candidate takes from one provider.
type Allocation struct {
	Provider  string
	Resources []state.ResourceAmount
}

// Mapping lists the providers that serve one request group.
type Mapping struct {
	Suffix    string
	Providers []string
}

// Summary describes a provider involved in the candidates.
type Summary struct {
	UUID       string
	ParentUUID string
	RootUUID   string
	// Resources covers every inventory of the provider, by class name.
	Resources []SummaryResource
	// Traits in upstream's (trait id) order.
	Traits []string
}

// SummaryResource is one inventory's capacity and usage.
type SummaryResource struct {
	Class    string
	Capacity int64
	Used     int64
}

// Result is the answer: candidates and the summaries of the providers of
// their trees, in provider ID order.
type Result struct {
	Candidates []Candidate
	Summaries  []Summary
	// Steps is the work the search did: anchors, options and combinations
	// looked at (for tests and the log, not part of the answer).
	Steps int64
	// Taken is what the search took from Options.Budget: the caller
	// gives it back once the answer is sent (or dropped).
	Taken int64

	mem *answerMem // what Candidates and Summaries are cut from
}

// Release hands the memory of the answer back to the next searches: the
// result (its candidates and summaries) must not be used after. Callers
// that do not call it leave the memory to the garbage collector.
func (r *Result) Release() {
	if r.mem != nil {
		r.Candidates, r.Summaries = nil, nil
		r.mem.release()
		r.mem = nil
	}
}

// LimitError says that a search stopped because its answer would have
// taken more than MaxBytes of memory.
type LimitError struct{ MaxBytes int64 }

func (e *LimitError) Error() string {
	return fmt.Sprintf("The allocation candidates for this request would take more than %d MiB to build; "+
		"ask for fewer (limit) or narrow the request.", e.MaxBytes>>20)
}

// NameError reports a resource class or trait the store does not know.
// Its message is upstream's exception text.
type NameError struct {
	Class bool // a resource class rather than a trait
	Name  string
}

func (e *NameError) Error() string {
	if e.Class {
		return "No such resource class " + e.Name + "."
	}
	return "No such trait(s): " + e.Name + "."
}

// Search finds the allocation candidates for req in one version of the
// state (which no write changes meanwhile). It returns a *NameError in
// the circumstances upstream raises one (an unknown name in a group
// upstream never reaches, because an earlier group already matched
// nothing, yields an empty result instead); ctx's error when ctx ended
// before the search did; a *LimitError when the answer would exceed
// opt.MaxBytes; ErrBusy when opt.Budget ran out.
func Search(ctx context.Context, st *state.Store, req *Request, opt Options) (*Result, error) {
	s := newSearch(ctx, st, req, opt)
	empty, err := s.checkNames()
	if err == nil && s.err != nil {
		err = s.err
	}
	if err != nil {
		s.giveBack()
		return nil, err
	}
	if empty {
		s.giveBack()
		return &Result{Steps: s.steps}, nil
	}
	res := s.run()
	if s.err != nil {
		s.giveBack()
		return nil, s.err
	}
	res.Steps = s.steps
	res.Taken = s.taken
	res.mem = s.mem
	return res, nil
}
