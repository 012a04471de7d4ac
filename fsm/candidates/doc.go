// Package candidates answers GET /allocation_candidates: given parsed
// request groups, it finds every way the state's resource providers can
// satisfy them, as upstream Placement's AllocationCandidates does, with the
// same results for microversions 1.10 to 1.39.
//
// It is plain Go over a *state.Store, one immutable version of the state,
// which it only reads (it holds no lock); everything it returns is a copy.
// The searches of one version share what they derive from it alone (the
// sharing providers by aggregate), so a version must not change once it
// has been searched, as published versions never do. An answer's memory
// is kept for later searches once the caller releases it
// (Result.Release).
//
// Upstream builds, for every request group, the set of (provider, anchor
// root) pairs that could serve it, then takes the product of those sets per
// anchor. Here the search goes anchor by anchor instead: for each candidate
// root provider (in ID order) it lists the providers that could serve each
// group from that tree and from the sharing providers the tree can reach,
// then walks their product depth-first, pruning a branch as soon as it
// breaks capacity, group_policy=isolate or same_subtree, or as soon as the
// levels left cannot all be served any more (prune.go). Candidates come
// out one at a time, so a limit (without randomization) or
// max_allocation_candidates stops the work early, and wide trees cost
// memory for one anchor's options only. A randomized answer with a limit
// is drawn (sample.go): a uniform sample of every candidate, in time that
// follows the limit, without building the others.
//
// The files follow the search's phases: search.go runs it (run) over
// filters.go (the request's filters before any combination), anchors.go
// (the root providers that anchor candidates), layout.go (per anchor,
// the providers that could serve each level), combinations.go and
// prune.go (the walk of their product), sample.go (random answers) and
// answer.go (candidates and summaries).
//
// Every search is bounded: it stops when its context ends (the request's
// deadline, or its client going away) and when the answer it builds would
// hold more than Options.MaxBytes, or than what Options.Budget (memory
// shared with the searches beside it) has left; Search then returns the
// reason.
//
// Like fsm/state, it must not import hashicorp/raft, net/http,
// gorilla/mux, cluster or httpapi: it is domain logic over one version of
// the state, which the HTTP layer calls after a read barrier (the
// import-rules test in internal/layering enforces this).
package candidates
