package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"

	gometrics "github.com/armon/go-metrics"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/fsm"
)

// raftStates are the values of placementd_raft_state's state label.
var raftStates = []raft.RaftState{raft.Follower, raft.Candidate, raft.Leader, raft.Shutdown}

// nodeCollector reads the Raft node at scrape time: no goroutine, and the
// values are never stale.
type nodeCollector struct {
	node    *cluster.Node
	snapDir string

	state, term, lastLog, commit, applied, lastSnap, lastContact, peers, leaderKnown, snapSize *prometheus.Desc
	groupEntries, groupCommands                                                                *prometheus.Desc
	timing, member, regionLossSafe                                                             *prometheus.Desc
}

func newNodeCollector(n *cluster.Node, snapDir string) *nodeCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "raft", name), help, labels, nil)
	}
	return &nodeCollector{
		node: n, snapDir: snapDir,
		state:       d("state", "1 for this node's current Raft state (follower, candidate, leader, shutdown), 0 for the others.", "state"),
		term:        d("term", "Current Raft term."),
		lastLog:     d("last_log_index", "Index of the last entry in this node's Raft log."),
		commit:      d("commit_index", "Highest log index this node knows to be committed."),
		applied:     d("applied_index", "Highest log index applied to this node's state machine."),
		lastSnap:    d("last_snapshot_index", "Log index covered by this node's latest Raft snapshot."),
		lastContact: d("last_contact_seconds", "Seconds since this follower last heard from the leader (0 on the leader, -1 never)."),
		peers:       d("peers", "Servers in the latest Raft configuration, by suffrage (voter, nonvoter).", "suffrage"),
		leaderKnown: d("has_leader", "1 when this node knows a leader."),
		snapSize:    d("snapshot_size_bytes", "Size of this node's latest Raft snapshot on disk."),
		groupEntries: d("proposed_entries_total", "Raft log entries this node proposed for writes; with group commit one entry holds "+
			"several commands under load (placementd_raft_proposed_commands_total / this = mean commands per entry)."),
		groupCommands: d("proposed_commands_total", "Commands in the Raft log entries this node proposed for writes."),
		timing:        d("timeout_seconds", "This node's Raft timing (heartbeat, election, leader_lease, commit); members should agree.", "timeout"),
		member: prometheus.NewDesc(prometheus.BuildFQName(namespace, "cluster", "member"),
			"1 for each member of the latest Raft configuration, with its suffrage and topology labels.", []string{"id", "suffrage", "region", "zone"}, nil),
		regionLossSafe: prometheus.NewDesc(prometheus.BuildFQName(namespace, "cluster", "survives_region_loss"),
			"1 when the voters keep a quorum after losing any one region, 0 when they do not (absent when no member has a region).", nil, nil),
	}
}

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.state, c.term, c.lastLog, c.commit, c.applied, c.lastSnap, c.lastContact, c.peers, c.leaderKnown,
		c.snapSize, c.groupEntries, c.groupCommands, c.timing, c.member, c.regionLossSafe} {
		ch <- d
	}
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	st := c.node.Status(false)
	for _, s := range raftStates {
		v := 0.0
		if s.String() == st.State {
			v = 1
		}
		gauge(c.state, v, stateName(s))
	}
	gauge(c.term, float64(st.Term))
	gauge(c.lastLog, float64(st.LastLogIndex))
	gauge(c.commit, float64(st.CommitIndex))
	gauge(c.applied, float64(st.AppliedIndex))
	gauge(c.lastSnap, float64(st.LastSnapshotIndex))
	switch lc := c.node.LastContact(); {
	case st.State == raft.Leader.String():
		gauge(c.lastContact, 0)
	case lc.IsZero():
		gauge(c.lastContact, -1)
	default:
		gauge(c.lastContact, time.Since(lc).Seconds())
	}
	members, err := c.node.Members()
	if err == nil {
		var voters, nonvoters float64
		for _, m := range members {
			if m.Voter {
				voters++
			} else {
				nonvoters++
			}
		}
		gauge(c.peers, voters, "voter")
		gauge(c.peers, nonvoters, "nonvoter")
	}
	known := 0.0
	if st.Leader != "" {
		known = 1
	}
	gauge(c.leaderKnown, known)
	if size, ok := latestSnapshotSize(c.snapDir); ok {
		gauge(c.snapSize, float64(size))
	}
	t := c.node.Timing()
	for _, tv := range []struct {
		name string
		v    time.Duration
	}{{"heartbeat", t.Heartbeat}, {"election", t.Election}, {"leader_lease", t.LeaderLease}, {"commit", t.Commit}} {
		gauge(c.timing, tv.v.Seconds(), tv.name)
	}
	if err == nil {
		labelled := false
		for _, m := range members {
			suffrage := "voter"
			if !m.Voter {
				suffrage = "nonvoter"
			}
			gauge(c.member, 1, m.ID, suffrage, m.Region, m.Zone)
			labelled = labelled || m.Region != ""
		}
		if labelled {
			safe := 1.0
			if len(cluster.QuorumWarnings(members)) > 0 {
				safe = 0
			}
			gauge(c.regionLossSafe, safe)
		}
	}
	entries, commands := c.node.GroupCommit()
	ch <- prometheus.MustNewConstMetric(c.groupEntries, prometheus.CounterValue, float64(entries))
	ch <- prometheus.MustNewConstMetric(c.groupCommands, prometheus.CounterValue, float64(commands))
}

func stateName(s raft.RaftState) string {
	switch s {
	case raft.Follower:
		return "follower"
	case raft.Candidate:
		return "candidate"
	case raft.Leader:
		return "leader"
	}
	return "shutdown"
}

// latestSnapshotSize reads the meta.json files of a raft.FileSnapshotStore
// directory (one per kept snapshot, a handful) and returns the size of the
// newest snapshot.
func latestSnapshotSize(dir string) (int64, bool) {
	if dir == "" {
		return 0, false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	var best raft.SnapshotMeta
	found := false
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "meta.json"))
		if err != nil {
			continue // being written, or not a snapshot
		}
		var meta raft.SnapshotMeta
		if json.Unmarshal(b, &meta) != nil {
			continue
		}
		if !found || meta.Term > best.Term || meta.Term == best.Term && meta.Index > best.Index {
			best, found = meta, true
		}
	}
	return best.Size, found
}

// WatchNode adds the node's Raft metrics: state, term and indexes read at
// scrape time, leader changes as they happen. dataDir (empty for an
// in-memory node) is where the node keeps its snapshots. The returned
// function stops watching.
func (m *Metrics) WatchNode(n *cluster.Node, dataDir string) (stop func()) {
	snapDir := ""
	if dataDir != "" {
		snapDir = filepath.Join(dataDir, "snapshots")
	}
	m.Registry.MustRegister(newNodeCollector(n, snapDir))
	changes := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "raft", Name: "leader_changes_total",
		Help: "Times this node learned of a new leader (itself included) since it started.",
	})
	m.Registry.MustRegister(changes)
	last, _ := n.Leader()
	if last != "" {
		changes.Inc()
	}
	done := make(chan struct{})
	go func() {
		for {
			changed := n.LeaderChanges() // before the look: no change is missed
			if id, _ := n.Leader(); id != last {
				if last = id; id != "" {
					changes.Inc()
				}
			}
			select {
			case <-done:
				return
			case <-changed:
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// WatchState adds the sizes of the placement state, read from its current
// version at scrape time.
func (m *Metrics) WatchState(f *fsm.FSM) {
	m.Registry.MustRegister(&stateCollector{fsm: f,
		providers:   prometheus.NewDesc(namespace+"_resource_providers", "Resource providers in the placement state.", nil, nil),
		consumers:   prometheus.NewDesc(namespace+"_consumers", "Consumers (holding allocations) in the placement state.", nil, nil),
		allocations: prometheus.NewDesc(namespace+"_allocations", "Allocations (consumer, provider, resource class) in the placement state.", nil, nil),
		classes:     prometheus.NewDesc(namespace+"_resource_classes", "Resource classes, standard and custom.", nil, nil),
		traits:      prometheus.NewDesc(namespace+"_traits", "Traits, standard and custom.", nil, nil),
		aggregates:  prometheus.NewDesc(namespace+"_aggregates", "Aggregates with at least one resource provider.", nil, nil),
	})
}

// RaftBridge forwards hashicorp/raft's own timings, which it reports
// through the process-wide armon/go-metrics sink, to Prometheus: snapshot
// capture and persist times (and so the number of snapshots), snapshot
// restores, commit and FSM apply times. The sink is global, so install it
// once per process (placementd serve runs one node).
func (m *Metrics) RaftBridge() error {
	b := &raftSink{
		snapshots: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "raft", Name: "snapshots_total",
			Help: "Raft snapshots this node wrote (log compactions).",
		}),
		snapshot: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "raft", Name: "snapshot_duration_seconds",
			Help:    "Time to take a Raft snapshot, by phase: capture (copying the state) and persist (writing it to disk).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"phase"}),
		restore: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "raft", Name: "snapshot_restore_duration_seconds",
			Help:    "Time to restore the state from a snapshot (start, snapshot install from the leader, backup restore).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "raft", Name: "commit_duration_seconds",
			Help:    "On the leader, time from dispatching log entries to their commit by a quorum.",
			Buckets: latencyBuckets,
		}),
		fsmApply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "fsm", Name: "apply_duration_seconds",
			Help:    "Time the state machine takes to apply one committed log entry (all the commands of a group commit batch).",
			Buckets: latencyBuckets,
		}),
	}
	for _, phase := range []string{"capture", "persist"} {
		b.snapshot.WithLabelValues(phase) // at zero from start (see Preset)
	}
	if err := registerAll(m.Registry, b.snapshots, b.snapshot, b.restore, b.commit, b.fsmApply); err != nil {
		return err
	}
	conf := gometrics.DefaultConfig("")
	conf.EnableHostname = false
	conf.EnableRuntimeMetrics = false
	_, err := gometrics.NewGlobal(conf, b)
	return err
}

func registerAll(r *prometheus.Registry, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// raftSink is a go-metrics sink keeping the few Raft timings placementd
// exposes; go-metrics timings are in milliseconds.
type raftSink struct {
	snapshots                 prometheus.Counter
	snapshot                  *prometheus.HistogramVec
	restore, commit, fsmApply prometheus.Histogram
}

func (s *raftSink) AddSample(key []string, val float32) {
	if len(key) < 2 || key[0] != "raft" {
		return
	}
	seconds := float64(val) / 1000
	switch k := key[1:]; {
	case eq(k, "fsm", "snapshot"):
		s.snapshot.WithLabelValues("capture").Observe(seconds)
	case eq(k, "snapshot", "persist"):
		s.snapshot.WithLabelValues("persist").Observe(seconds)
		s.snapshots.Inc()
	case eq(k, "fsm", "restore"):
		s.restore.Observe(seconds)
	case eq(k, "commitTime"):
		s.commit.Observe(seconds)
	case eq(k, "fsm", "apply"):
		s.fsmApply.Observe(seconds)
	}
}

func eq(key []string, want ...string) bool {
	if len(key) != len(want) {
		return false
	}
	for i := range key {
		if key[i] != want[i] {
			return false
		}
	}
	return true
}

func (s *raftSink) AddSampleWithLabels(key []string, val float32, _ []gometrics.Label) {
	s.AddSample(key, val)
}
func (s *raftSink) SetGauge([]string, float32)                                 {}
func (s *raftSink) SetGaugeWithLabels([]string, float32, []gometrics.Label)    {}
func (s *raftSink) EmitKey([]string, float32)                                  {}
func (s *raftSink) IncrCounter([]string, float32)                              {}
func (s *raftSink) IncrCounterWithLabels([]string, float32, []gometrics.Label) {}
