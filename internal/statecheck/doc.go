// Package statecheck holds the checks the fuzz tests and the fault
// harness make of a placement state: its digest without the Raft index
// (so that a rejected command, which still advances the index, can be
// seen to have changed nothing) and the consistency of the indexes the
// store maintains incrementally with the ones Load rebuilds from scratch.
//
// It imports fsm/state and fsm/image (the digest), and must not import
// cluster, httpapi or hashicorp/raft: the checks are of the state alone,
// usable by any test. Only tests may import it.
package statecheck
