package fsm

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/placementd/placementd/fsm/state"
)

// EntryVersion is the version of the log entry envelope this build writes.
// Decode accepts every version up to it.
const EntryVersion = 1

type envelope struct {
	Version int             `json:"v"`
	Kind    string          `json:"k"`
	Time    time.Time       `json:"t"`
	Payload json.RawMessage `json:"p"`
}

// Encode turns a command into a log entry stamped with the proposer's time.
func Encode(cmd state.Command, now time.Time) ([]byte, error) {
	payload, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	return json.Marshal(envelope{Version: EntryVersion, Kind: cmd.Kind(), Time: now.UTC(), Payload: payload})
}

// Decode reads a log entry back into its command and time.
func Decode(data []byte) (state.Command, time.Time, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, time.Time{}, fmt.Errorf("log entry: %w", err)
	}
	if env.Version < 1 || env.Version > EntryVersion {
		return nil, time.Time{}, fmt.Errorf("log entry: version %d not understood by this build (max %d)", env.Version, EntryVersion)
	}
	cmd := state.NewCommand(env.Kind)
	if cmd == nil {
		return nil, time.Time{}, fmt.Errorf("log entry: unknown command kind %q", env.Kind)
	}
	if err := json.Unmarshal(env.Payload, cmd); err != nil {
		return nil, time.Time{}, fmt.Errorf("log entry %s: %w", env.Kind, err)
	}
	return cmd, env.Time, nil
}
