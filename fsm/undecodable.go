package fsm

import (
	"errors"
	"fmt"
)

// UndecodableEntry is a committed log entry this build cannot decode.
// Applying past it would let this replica diverge from the others, and
// skipping it is no better, so Apply stops there: FSM.OnUndecodable is
// told (the command stops the node with Error's text), else Apply panics
// with it.
type UndecodableEntry struct {
	Index uint64
	Data  []byte
	Err   error
}

// shownBytes bounds how much of the entry the message quotes.
const shownBytes = 512

func (e *UndecodableEntry) Error() string {
	data, more := e.Data, ""
	if len(data) > shownBytes {
		data, more = data[:shownBytes], fmt.Sprintf(" (the first %d of %d bytes)", shownBytes, len(e.Data))
	}
	what := "If the other members run a newer placementd, upgrade this node to their version and start it again."
	var ve *VersionError
	if errors.As(e.Err, &ve) {
		what = "The entry was written by a newer placementd: upgrade this node to the others' version and start it again."
	}
	return fmt.Sprintf("committed Raft log entry %d cannot be decoded (%v); nothing after it was applied. Entry bytes%s: %q. %s "+
		"Otherwise the entry did not come from placementd (forged or corrupted): on a member of a cluster, "+
		"move this node's data dir aside and start it with --join to copy the state from the others; "+
		"on a lone node, restore the last backup into a new data dir (placementd snapshot restore).",
		e.Index, e.Err, more, data, what)
}

func (e *UndecodableEntry) Unwrap() error { return e.Err }

// StopAt stops applying at the committed entry at index that cannot be decoded
// (err): OnUndecodable is told, and it does not return; without it, a
// panic. The membership table, which frames its entries in this FSM's log,
// stops through it too.
func (f *FSM) StopAt(index uint64, data []byte, err error) {
	bad := &UndecodableEntry{Index: index, Data: data, Err: err}
	if f.OnUndecodable != nil {
		f.OnUndecodable(bad)
	}
	panic("fsm: " + bad.Error())
}
