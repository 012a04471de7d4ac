package fsm

import (
	"bytes"
	"fmt"
	"time"

	// Every node decodes every log entry, and under write load that was
	// the largest cost of a follower's state machine: goccy/go-json
	// decodes an allocation entry about 5x faster than encoding/json
	// (bench: go test ./fsm -bench Decode) and writes the same JSON, so
	// builds using either read each other's entries.
	json "github.com/goccy/go-json"

	"github.com/placementd/placementd/fsm/state"
)

// EntryVersion is the newest log entry envelope this build writes. Decode
// accepts every version up to it. Version 2 added the batch entry; version
// 3 the commands an older build would apply otherwise: allocation writes
// that keep their request's order (state.SetAllocations and state.Reshape
// with WriteOrder) and resource classes numbered as upstream numbers them
// (state.CreateResourceClass with MaxPlusOne). Every other command is
// still written as version 1 (entryVersion), so that older builds read it.
// Version 4 changes no placement entry: it adds the cluster metadata entry
// that raises the cluster version (ClusterVersionEntry), which a build
// reading up to v3 stops at.
const EntryVersion = 4

// batchKind marks an entry whose payload is a list of whole
// single-command entries (so each keeps its proposer's time), applied in
// order as one Raft log entry.
const batchKind = "batch"

type envelope struct {
	Version int             `json:"v"`
	Kind    string          `json:"k"`
	Time    time.Time       `json:"t"`
	Payload json.RawMessage `json:"p"`
}

// Entry is one command of a log entry and the time its proposer stamped.
type Entry struct {
	Cmd  state.Command
	Time time.Time
}

// Encode turns a command into a log entry stamped with the proposer's time.
func Encode(cmd state.Command, now time.Time) ([]byte, error) {
	payload, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	return json.Marshal(envelope{Version: entryVersion(cmd), Kind: cmd.Kind(), Time: now.UTC(), Payload: payload})
}

// EntryVersionOf is the log entry format Encode writes cmd in: the oldest
// whose readers apply it as this build does. The cluster writes it only
// when every member reads that version.
func EntryVersionOf(cmd state.Command) int { return entryVersion(cmd) }

func entryVersion(cmd state.Command) int {
	switch c := cmd.(type) {
	case *state.SetAllocations:
		if c.WriteOrder {
			return 3
		}
	case *state.Reshape:
		if c.WriteOrder {
			return 3
		}
	case *state.CreateResourceClass:
		if c.MaxPlusOne {
			return 3
		}
	}
	return 1
}

// EncodeBatch joins two or more entries made by Encode into one batch
// entry. It only concatenates: the entries are not decoded again.
func EncodeBatch(entries [][]byte) []byte {
	size := 32
	for _, e := range entries {
		size += len(e) + 1
	}
	out := make([]byte, 0, size)
	out = fmt.Appendf(out, `{"v":2,"k":%q,"p":[`, batchKind)
	for i, e := range entries {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, "]}"...)
}

// clusterEntryPrefix starts a cluster metadata entry: the cluster's own
// record (package cluster's membership table) carried in the Raft log
// beside the placement entries, which are JSON objects and start with
// '{'. Its payload is the cluster's, opaque here; it has no version of
// its own (the cluster refuses what it does not understand in it).
var clusterEntryPrefix = []byte("\x00placementd-cluster ")

// EncodeClusterEntry frames the cluster's payload as a log entry.
func EncodeClusterEntry(payload []byte) []byte {
	return append(append(make([]byte, 0, len(clusterEntryPrefix)+len(payload)), clusterEntryPrefix...), payload...)
}

// ClusterEntry returns the payload of a cluster metadata entry; ok is
// false for any other entry (a placement entry, for Decode).
func ClusterEntry(data []byte) (payload []byte, ok bool) {
	return bytes.CutPrefix(data, clusterEntryPrefix)
}

// Decode reads a log entry back into its commands, in the order they are
// to be applied: one, or several for a batch entry.
func Decode(data []byte) ([]Entry, error) {
	if _, ok := ClusterEntry(data); ok {
		return nil, fmt.Errorf("log entry: a cluster metadata entry, not placement commands")
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("log entry: %w", err)
	}
	if err := checkVersion("log entry", env.Version, EntryVersion); err != nil {
		return nil, err
	}
	if env.Kind != batchKind {
		e, err := decodeCommand(env)
		if err != nil {
			return nil, err
		}
		return []Entry{e}, nil
	}
	if env.Version < 2 {
		return nil, fmt.Errorf("log entry: batch in a version %d entry", env.Version)
	}
	var elems []envelope
	if err := json.Unmarshal(env.Payload, &elems); err != nil {
		return nil, fmt.Errorf("log entry batch: %w", err)
	}
	if len(elems) < 2 {
		// EncodeBatch is only used for two or more; Apply tells a batch's
		// results from a single command's by their number.
		return nil, fmt.Errorf("log entry: batch of %d commands", len(elems))
	}
	out := make([]Entry, len(elems))
	for i, elem := range elems {
		if err := checkVersion("log entry", elem.Version, EntryVersion); err != nil {
			return nil, fmt.Errorf("batch element %d: %w", i, err)
		}
		if elem.Kind == batchKind {
			return nil, fmt.Errorf("log entry: batch element %d is a batch", i)
		}
		e, err := decodeCommand(elem)
		if err != nil {
			return nil, fmt.Errorf("batch element %d: %w", i, err)
		}
		out[i] = e
	}
	return out, nil
}

func decodeCommand(env envelope) (Entry, error) {
	cmd := NewCommand(env.Kind)
	if cmd == nil {
		return Entry{}, fmt.Errorf("log entry: unknown command kind %q", env.Kind)
	}
	if err := json.Unmarshal(env.Payload, cmd); err != nil {
		return Entry{}, fmt.Errorf("log entry %s: %w", env.Kind, err)
	}
	return Entry{Cmd: cmd, Time: env.Time}, nil
}
