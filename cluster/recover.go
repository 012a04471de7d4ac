package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/placementd/placementd/fsm"
)

// Recovery from a lost quorum: when most voters are gone for good, the
// Raft state of a stopped survivor is rewritten so that it alone is the
// voter of its configuration (hashicorp/raft's RecoverCluster), keeping
// every entry it holds; `serve` on it then leads alone and new nodes join
// it. Entries the survivor never received are lost, and entries it holds
// that were never committed become committed. docs/operators-guide.md,
// "Outage recovery".

// RecoverResult says what Recover did (or, for a dry run, would do).
type RecoverResult struct {
	NodeID   string
	RaftAddr string
	// LastIndex and Term are the survivor's last log entry: between
	// survivors, the one with the highest term, then index, holds the most.
	LastIndex, Term uint64
	// Digest is the digest of the placement state the node will serve, at
	// StateIndex (empty for a dry run).
	Digest     string
	StateIndex uint64
	// Removed are the other servers of its last configuration.
	Removed []string
}

// ErrDataDirInUse: the data dir is held by a running node.
var ErrDataDirInUse = errors.New("the data dir is in use by a running placementd")

// Recover makes the stopped node of dataDir the only voter of its
// cluster; nodeID "" is the id kept in the data dir. With dryRun it only
// reads: the last index and term, to pick the most up-to-date survivor.
func Recover(dataDir, nodeID string, dryRun bool, logger hclog.Logger) (RecoverResult, error) {
	var res RecoverResult
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if fi, err := os.Stat(dataDir); err != nil || !fi.IsDir() {
		return res, fmt.Errorf("recover: %s is not a directory (give the data dir of a stopped member with --data-dir)", dataDir)
	}
	dbPath := filepath.Join(dataDir, "raft.db")
	if _, err := os.Stat(dbPath); err != nil {
		return res, fmt.Errorf("recover: %s is not a placementd data dir (it has no raft.db); give the --data-dir a member was served from", dataDir)
	}
	if nodeID == "" {
		b, err := os.ReadFile(filepath.Join(dataDir, "node-id"))
		if err != nil {
			return res, fmt.Errorf("recover: %s keeps no node id; give the node's --node-id", dataDir)
		}
		nodeID = strings.TrimSpace(string(b))
	}
	res.NodeID = nodeID
	store, err := raftboltdb.New(raftboltdb.Options{
		Path: dbPath,
		// bbolt locks the file: a running node holds it, and the open
		// gives up after the timeout instead of waiting for it.
		BoltOptions:             &bbolt.Options{Timeout: time.Second, NoFreelistSync: true},
		MsgpackUseNewTimeFormat: true,
	})
	if errors.Is(err, bbolt.ErrTimeout) {
		return res, fmt.Errorf("recover: %w (%s is locked): stop the node first", ErrDataDirInUse, dbPath)
	}
	if err != nil {
		return res, fmt.Errorf("recover: opening %s: %w", dbPath, err)
	}
	defer store.Close()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dataDir, 2, logger)
	if err != nil {
		return res, fmt.Errorf("recover: %w", err)
	}
	conf, last, err := latestConfiguration(store, snaps)
	if err != nil {
		return res, fmt.Errorf("recover: %w", err)
	}
	res.LastIndex, res.Term = last.Index, last.Term
	var self *raft.Server
	for i, s := range conf.Servers {
		if string(s.ID) == nodeID {
			self = &conf.Servers[i]
		} else {
			res.Removed = append(res.Removed, string(s.ID))
		}
	}
	sort.Strings(res.Removed)
	if self == nil {
		return res, fmt.Errorf("recover: node %q is not in its last Raft configuration (%s): give the right --node-id", nodeID, serverIDs(conf))
	}
	res.RaftAddr = string(self.Address)
	if dryRun {
		return res, nil
	}

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(nodeID)
	rc.Logger = logger
	machine := fsm.New()
	meta := newClusterFSM(machine, 0)
	_, trans := raft.NewInmemTransport(self.Address)
	alone := raft.Configuration{Servers: []raft.Server{{ID: self.ID, Address: self.Address, Suffrage: raft.Voter}}}
	if err := raft.RecoverCluster(rc, meta, store, store, indexedSnapshots{snaps}, trans, alone); err != nil {
		return res, fmt.Errorf("recover: %w", err)
	}
	res.Digest, res.StateIndex = machine.Digest()
	return res, nil
}

// lastEntry is the index and term of a log's (or snapshot's) last entry.
type lastEntry struct{ Index, Term uint64 }

// latestConfiguration is the last Raft configuration the node holds (in
// its log, else in its newest snapshot) and its last entry.
func latestConfiguration(logs raft.LogStore, snaps raft.SnapshotStore) (raft.Configuration, lastEntry, error) {
	var conf raft.Configuration
	var last lastEntry
	found := false
	if list, err := snaps.List(); err == nil && len(list) > 0 {
		conf, found = list[0].Configuration, true
		last = lastEntry{list[0].Index, list[0].Term}
	}
	snapIndex := last.Index
	first, err := logs.FirstIndex()
	if err != nil {
		return conf, last, err
	}
	lastIndex, err := logs.LastIndex()
	if err != nil {
		return conf, last, err
	}
	if lastIndex > 0 {
		var l raft.Log
		if err := logs.GetLog(lastIndex, &l); err != nil {
			return conf, last, fmt.Errorf("reading log entry %d: %w", lastIndex, err)
		}
		if l.Index >= last.Index {
			last = lastEntry{l.Index, l.Term}
		}
		// The newest configuration entry after the snapshot's, searched
		// from the end.
		for i := lastIndex; i > snapIndex && i >= max(first, 1); i-- {
			if err := logs.GetLog(i, &l); err != nil {
				return conf, last, fmt.Errorf("reading log entry %d: %w", i, err)
			}
			if l.Type == raft.LogConfiguration {
				conf, found = raft.DecodeConfiguration(l.Data), true
				break
			}
		}
	}
	if !found {
		return conf, last, errors.New("the data dir holds no Raft configuration (a node that never joined a cluster)")
	}
	return conf, last, nil
}

func serverIDs(c raft.Configuration) string {
	var ids []string
	for _, s := range c.Servers {
		ids = append(ids, string(s.ID))
	}
	return "servers: " + strings.Join(ids, ", ")
}
