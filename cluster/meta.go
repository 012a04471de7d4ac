package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm"
)

// Members' HTTP addresses travel through the Raft log beside the placement
// commands, so every node can find the leader's API to forward requests to,
// including a node that joined by snapshot install. hashicorp/raft keeps no
// per-server metadata, and the placement state (and its digest) must not
// change when a node moves, so they live here and not in fsm/state.

// The table's meaning is this package's; how it is framed on disk is
// fsm's, which owns every persisted format: a change is a cluster metadata
// entry (fsm.EncodeClusterEntry) whose payload is a metaEntry's JSON, and
// a Raft snapshot starts with the cluster's section
// (fsm.WriteClusterSection), the table's JSON, then the placement snapshot
// file. Section v1 held the API addresses only (id -> address); v2 holds
// memberMeta. A node reads both; only the newest build writes v2, which
// fits the upgrade order (the newest nodes lead last, so older ones never
// install a v2 snapshot).

// memberMeta is what the cluster keeps about a member beside Raft's own
// configuration: where its API is, and its topology labels.
type memberMeta struct {
	HTTPAddr string `json:"http_addr,omitempty"`
	Region   string `json:"region,omitempty"`
	Zone     string `json:"zone,omitempty"`
	// BuildVersion and Reads are what the member reported of its build
	// (clusterversion.go); a member of 0.9.0 reports nothing, and older
	// builds ignore both fields.
	BuildVersion string      `json:"build_version,omitempty"`
	Reads        fsm.Formats `json:"reads,omitzero"`
}

// metaEntry is one change to the membership table: "set" replaces a
// member's entry (older builds ignore the labels and the report),
// "delete" removes it; "cluster_version" raises the cluster version
// (log entry format v4: written only once every member reads it).
type metaEntry struct {
	Op             string              `json:"op"` // "set", "delete" or "cluster_version"
	ID             string              `json:"id,omitempty"`
	HTTPAddr       string              `json:"http_addr,omitempty"`
	Region         string              `json:"region,omitempty"`
	Zone           string              `json:"zone,omitempty"`
	BuildVersion   string              `json:"build_version,omitempty"`
	Reads          fsm.Formats         `json:"reads,omitzero"`
	ClusterVersion *fsm.ClusterVersion `json:"cluster_version,omitempty"`
}

func setEntry(id string, m memberMeta) metaEntry {
	return metaEntry{Op: "set", ID: id, HTTPAddr: m.HTTPAddr, Region: m.Region, Zone: m.Zone,
		BuildVersion: m.BuildVersion, Reads: m.Reads}
}

func encodeMeta(e metaEntry) []byte {
	b, _ := json.Marshal(e)
	return fsm.EncodeClusterEntry(b)
}

// clusterFSM wraps the placement FSM with the membership table.
type clusterFSM struct {
	inner *fsm.FSM

	mu      sync.RWMutex
	members map[string]memberMeta // by node id
	// version is the cluster version as last raised (zero: never, the
	// cluster is at fsm.PreviousReleaseFormats; clusterversion.go).
	version fsm.ClusterVersion

	// Bytes of log entries applied since the last snapshot. Raft snapshots
	// by entry count; an import is a few hundred entries of a MiB each,
	// which would otherwise stay in the log (and be replayed at every
	// restart) until thousands more entries came. Past snapshotBytes
	// (0: never) a signal goes to compact, where the node asks Raft for a
	// snapshot; the node also looks at the count when an import may have
	// ended (Node.compactLog). When a snapshot happens has no effect on
	// the state.
	sinceSnapshot atomic.Int64
	snapshotBytes int64
	compact       chan struct{}

	// applying is the index of the entry Apply is working on (0 between
	// entries) and applied the last one it finished (or the index of the
	// snapshot it restored last, if that came after). Raft counts an entry
	// applied once it has handed it to the state machine, which may still
	// be stuck on an earlier one or far behind: readiness looks here.
	applying, applied atomic.Uint64

	// onApply, when set, is called after every applied entry and restore.
	onApply func()
}

func newClusterFSM(inner *fsm.FSM, snapshotBytes int64) *clusterFSM {
	return &clusterFSM{inner: inner, members: map[string]memberMeta{}, snapshotBytes: snapshotBytes, compact: make(chan struct{}, 1)}
}

func (c *clusterFSM) Apply(l *raft.Log) any {
	c.applying.Store(l.Index)
	res := c.apply(l)
	c.applied.Store(l.Index)
	c.applying.Store(0)
	if c.onApply != nil {
		c.onApply()
	}
	return res
}

func (c *clusterFSM) apply(l *raft.Log) any {
	if since := c.sinceSnapshot.Add(int64(len(l.Data))); c.snapshotBytes > 0 && since >= c.snapshotBytes {
		select {
		case c.compact <- struct{}{}:
		default:
		}
	}
	payload, ok := fsm.ClusterEntry(l.Data)
	if l.Type != raft.LogCommand || !ok {
		return c.inner.Apply(l)
	}
	var e metaEntry
	err := json.Unmarshal(payload, &e)
	if err == nil && !(e.Op == "set" || e.Op == "delete" || e.Op == "cluster_version" && e.ClusterVersion != nil) {
		err = fmt.Errorf("unknown op %q", e.Op)
	}
	if err != nil {
		// As for placement entries: never skip what the others applied;
		// stop as they do (fsm.UndecodableEntry).
		c.inner.StopAt(l.Index, l.Data, fmt.Errorf("membership entry: %w", err))
	}
	c.mu.Lock()
	switch e.Op {
	case "set":
		c.members[e.ID] = memberMeta{HTTPAddr: e.HTTPAddr, Region: e.Region, Zone: e.Zone, BuildVersion: e.BuildVersion, Reads: e.Reads}
	case "delete":
		delete(c.members, e.ID)
	case "cluster_version":
		// Never lowered: an entry proposed by a leader that lost the race
		// to a higher one changes nothing.
		if e.ClusterVersion.Covers(c.version.Formats) {
			c.version = *e.ClusterVersion
		}
	}
	c.mu.Unlock()
	return nil
}

// httpAddr is the advertised HTTP address of node id ("" if unknown).
func (c *clusterFSM) httpAddr(id string) string { return c.member(id).HTTPAddr }

func (c *clusterFSM) member(id string) memberMeta {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.members[id]
}

func (c *clusterFSM) table() map[string]memberMeta {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string]memberMeta, len(c.members))
	for k, v := range c.members {
		out[k] = v
	}
	return out
}

// Snapshot runs on raft's FSM goroutine, so no Apply runs concurrently and
// the table and the state are taken at the same index.
func (c *clusterFSM) Snapshot() (raft.FSMSnapshot, error) {
	c.sinceSnapshot.Store(0)
	inner, err := c.inner.Snapshot()
	if err != nil {
		return nil, err
	}
	return &clusterSnapshot{members: c.table(), version: c.clusterVersion(), inner: inner}, nil
}

// Restore accepts a snapshot written by clusterSnapshot (v1 or v2), or a
// bare placement snapshot (a backup given to raft.Restore), which keeps
// the current membership table. The state then includes every entry up to
// the snapshot's index (indexedSnapshots passes it on).
func (c *clusterFSM) Restore(rc io.ReadCloser) error {
	// While the state is replaced it includes nothing for sure; after, it
	// includes the snapshot's index (unknown without indexedSnapshots).
	c.applied.Store(0)
	// The log before a snapshot installed from the leader is this node's
	// no longer: count from here.
	c.sinceSnapshot.Store(0)
	if err := c.restore(rc); err != nil {
		return err
	}
	if s := snapshotOpened(rc); s != nil {
		c.applied.Store(s.index)
		if c.onApply != nil {
			c.onApply()
		}
	}
	return nil
}

// snapshotOpened finds the indexedSnapshot under raft's wrappers (raft
// counts the bytes a restore reads through one), nil if there is none.
func snapshotOpened(rc io.ReadCloser) *indexedSnapshot {
	for {
		switch r := rc.(type) {
		case *indexedSnapshot:
			return r
		case raft.ReadCloserWrapper:
			rc = r.WrappedReadCloser()
		default:
			return nil
		}
	}
}

func (c *clusterFSM) restore(rc io.ReadCloser) error {
	version, section, rest, err := fsm.ReadClusterSection(rc)
	if err == nil && section != nil {
		var members map[string]memberMeta
		var cv fsm.ClusterVersion
		members, cv, err = decodeSection(version, section)
		if err != nil {
			err = fmt.Errorf("cluster snapshot section: %w", err)
		} else {
			c.mu.Lock()
			c.members, c.version = members, cv
			c.mu.Unlock()
		}
	}
	if err != nil {
		rc.Close()
		return err
	}
	return c.inner.Restore(struct {
		io.Reader
		io.Closer
	}{rest, rc})
}

// sectionV3 is the payload of a cluster snapshot section v3: the table
// and the cluster version. v2 is the table alone, v1 API addresses only.
type sectionV3 struct {
	Members        map[string]memberMeta `json:"members"`
	ClusterVersion fsm.ClusterVersion    `json:"cluster_version"`
}

// decodeSection reads the payload of a cluster snapshot section of the
// given version (fsm has refused the versions it does not know). Before
// v3 the cluster version had never been raised (the zero one).
func decodeSection(version int, payload []byte) (map[string]memberMeta, fsm.ClusterVersion, error) {
	members := map[string]memberMeta{}
	switch version {
	case 1:
		addrs := map[string]string{}
		if err := json.Unmarshal(payload, &addrs); err != nil {
			return nil, fsm.ClusterVersion{}, err
		}
		for id, a := range addrs {
			members[id] = memberMeta{HTTPAddr: a}
		}
		return members, fsm.ClusterVersion{}, nil
	case 2:
		return members, fsm.ClusterVersion{}, json.Unmarshal(payload, &members)
	}
	var s sectionV3
	if err := json.Unmarshal(payload, &s); err != nil {
		return nil, fsm.ClusterVersion{}, err
	}
	if s.Members == nil {
		s.Members = members
	}
	return s.Members, s.ClusterVersion, nil
}

type clusterSnapshot struct {
	members map[string]memberMeta
	version fsm.ClusterVersion // the cluster version at the snapshot's index
	inner   raft.FSMSnapshot
}

// Persist writes the section in the newest version every member reads:
// v3 (with the cluster version) once the cluster version allows it, else
// v2, which 0.9.0 reads (it ignores the members' reports).
func (s *clusterSnapshot) Persist(sink raft.SnapshotSink) error {
	// encoding/json sorts map keys.
	version, b := 2, []byte(nil)
	if s.version.ClusterSection >= fsm.ClusterVersionSection {
		version = fsm.ClusterVersionSection
		b, _ = json.Marshal(sectionV3{Members: s.members, ClusterVersion: s.version})
	} else {
		b, _ = json.Marshal(s.members)
	}
	if err := fsm.WriteClusterSection(sink, version, b); err != nil {
		sink.Cancel()
		return err
	}
	return s.inner.Persist(sink)
}

func (s *clusterSnapshot) Release() { s.inner.Release() }

func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
