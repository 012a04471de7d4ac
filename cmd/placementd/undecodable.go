package main

import (
	"log/slog"
	"os"

	"github.com/placementd/placementd/fsm"
)

// stopOnUndecodable is the state machine's OnUndecodable: a committed
// entry this build cannot decode stops the node with the entry's index,
// its bytes and what to do, instead of a panic's stack trace. Raft cannot
// go on past the entry (the state machine is stuck in it, and skipping it
// would diverge from the other members), so the process exits; the log
// and the state stay as they are for the operator's choice.
func stopOnUndecodable(log *slog.Logger) func(*fsm.UndecodableEntry) {
	return func(bad *fsm.UndecodableEntry) {
		log.Error("STOPPING: "+bad.Error(), "index", bad.Index)
		os.Exit(1)
	}
}
