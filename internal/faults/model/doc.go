// Package model is a sequential specification of the Placement
// operations the fault harness drives, for the porcupine linearizability
// checker: allocation writes with consumer generations (PUT
// /allocations/{consumer}, POST /allocations moving several consumers at
// once), DELETE /allocations/{consumer}, and reads of a consumer's
// allocations and of a provider's usages.
//
// It follows fsm/state's rules for these commands (which are upstream's):
// consumer generations are checked first, then capacity; a consumer's
// generation goes up with every write that gives it allocations or takes
// some away; a consumer left with none is deleted; DELETE needs
// allocations to remove. Provider generations are not modelled: the
// harness never writes with them.
//
// Histories are partitioned by Input.Group: the harness keeps each
// group's consumers on the group's own providers, so groups are
// independent and each is checked on its own, which keeps checking fast.
//
// It imports nothing of placementd (porcupine only): the model is an
// independent statement of the rules, so it must not reuse fsm/state's
// code it checks.
package model
