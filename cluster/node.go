package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/placementd/placementd/cluster/backend"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
)

// The errors a write ends in besides a rejection by the state, defined in
// package backend so that the API can name them without importing the node.
var (
	ErrNotLeader      = backend.ErrNotLeader
	ErrUnknownOutcome = backend.ErrUnknownOutcome
)

// Config says where a node keeps its data and how it is reached.
type Config struct {
	NodeID   string
	RaftAddr string // host:port to bind; port 0 picks a free one
	// RaftAdvertise is the address other nodes dial (default: RaftAddr,
	// which must then be a specific IP).
	RaftAdvertise string
	// HTTPAddr is the host:port of this node's API as other nodes reach
	// it; followers forward requests there when this node leads.
	HTTPAddr string
	// Region and Zone label the node (topology.go).
	Region, Zone string
	DataDir      string
	// Bootstrap makes a fresh data directory a single-node cluster.
	Bootstrap bool
	// ApplyTimeout bounds how long Apply waits to enqueue and for a leader.
	ApplyTimeout time.Duration
	Logger       hclog.Logger
	// Transport, when set, replaces the TCP transport (in-memory tests).
	Transport raft.Transport
	// RaftTLS, when set, makes the Raft transport mutual TLS: this node's
	// certificate (Certificates) and the cluster's CA (RootCAs). Every
	// peer, dialing or dialed, must present a certificate the CA signed,
	// with serverAuth and clientAuth usages; host names are not checked
	// (see raftTLSConfigs). Every member must use it, or none.
	RaftTLS *tls.Config
	// RaftConns bounds the inbound connections of the Raft port
	// (raftlisten.go; nil: DefaultRaftConnLimits). Not used with Transport.
	RaftConns *RaftConnLimits
	// APITLS, when set, says that every member serves its API over HTTPS:
	// this node reaches its peers' APIs (forwarding to the leader, status,
	// join, leave) with https:// and verifies their certificates with
	// APITLS.RootCAs (nil: the system roots), host name included. It is
	// the client side only; serving HTTPS is the caller's business.
	APITLS *tls.Config
	// InMemory keeps the log in memory, and snapshots too unless DataDir
	// is set (tests only).
	InMemory bool
	// SnapshotBytes makes the node take a Raft snapshot once this many
	// bytes of log entries were applied since the last one, whatever their
	// number (default 256 MiB; negative: only raft's entry threshold).
	SnapshotBytes int64
	// SnapshotBurstBytes makes the node take a Raft snapshot when at least
	// this many bytes of log entries were applied since the last one and
	// the log then goes quiet (compactLog): the end of an import, so that
	// a restart soon after restores the snapshot instead of replaying the
	// import (default 16 MiB; negative: off).
	SnapshotBurstBytes int64
	// Timing is the Raft timing (timing.go); zero fields keep raft's
	// defaults. Tune may still change it.
	Timing Timing
	// Tune, when set, may adjust the Raft configuration before start.
	Tune func(*raft.Config)
	// PlainElections leaves elections to raft's random timers and the
	// quorum nudge (nudge.go), without the election order of
	// electorder.go (for comparison; every member should agree).
	PlainElections bool
	// BuildVersion is this node's build ("0.10.0+COMMIT"), which it
	// reports to the cluster with the formats it reads
	// (clusterversion.go).
	BuildVersion string
	// Reads, when set, is what this node reports it reads instead of
	// fsm.BuildFormats: tests stand a node for an older or newer build.
	Reads fsm.Formats
	// SecretIDs name the cluster secrets this node accepts, current
	// first, then the next one during a rotation (SecretID): compared
	// when a node joins (secretrotation.go).
	SecretIDs []string
}

// Node is one placementd Raft member.
type Node struct {
	cfg    Config
	raft   *raft.Raft
	fsm    *fsm.FSM
	meta   *clusterFSM
	timing Timing
	// timers: every change of raft's timeouts after start (electorder.go);
	// peers: what the probes of the other voters found (peerconns.go).
	timers    *electionTimers
	peers     peerProbes
	probedBy  chan raft.ServerID
	transport raft.Transport
	// rawTransport is the transport without the acknowledgement tracking
	// (the peer probes send through it).
	rawTransport raft.Transport
	// raftLn is the Raft TCP listener (nil with Config.Transport), told
	// the members' addresses (tellRaftListenerMembers).
	raftLn   *raftListener
	closers  []func() error
	stop     chan struct{}
	stopOnce sync.Once
	done     sync.WaitGroup

	mu          sync.Mutex
	readyTerm   uint64      // term whose barrier has completed
	barrierWait *barrierRun // the barrier in flight, if any

	// roundStarts, when set (tests), runs as each leadership round
	// starts, before it reads the term it will confirm.
	roundStarts atomic.Pointer[func()]

	// Concurrent reads share leadership checks (verifyLeader), which
	// count only fresh acknowledgements (readacks.go).
	verify *sharedRounds
	acks   *ackTracker
	// protocolVersion is raft's, for the heartbeats read rounds send.
	protocolVersion raft.ProtocolVersion
	// applied is closed and replaced whenever the FSM applies an entry,
	// for reads waiting for the state to reach an index.
	appliedMu sync.Mutex
	applied   chan struct{}
	// logs is raft's log store (stateIndex looks at entries there);
	// confirmed is when, on sinceBoot's clock, this node asked for the
	// newest read index its state has reached (readindex.go; 0: never).
	logs      raft.LogStore
	confirmed atomic.Int64

	// The write gate: StopWrites closes it so that a leader about to hand
	// over takes no new command and waits for those already proposed,
	// whose outcome would otherwise turn unknown with the transfer.
	// TransferLeadershipTo holds it closed while a transfer lasts
	// (handingOver) and opens it again after.
	gate        sync.RWMutex
	gateClosed  bool
	handingOver int
	proposing   atomic.Int64 // commands past the gate still waiting for their result

	proposer proposer

	// versionMu keeps joins and raises of the cluster version apart
	// (clusterversion.go).
	versionMu sync.Mutex

	lmu      sync.Mutex
	leaderCh chan struct{} // closed at the next change of leader (leaderChanges)
}

// Open starts a node over f with the configured stores: the Raft
// configuration, the log, stable and snapshot stores, the transport, a
// fresh data directory bootstrapped when asked, then Raft and the node's
// background loops.
func Open(cfg Config, f *fsm.FSM) (*Node, error) {
	cfg = cfg.withDefaults()
	n := &Node{cfg: cfg, fsm: f, meta: newClusterFSM(f, max(cfg.SnapshotBytes, 0)), stop: make(chan struct{}),
		acks: newAckTracker(), applied: make(chan struct{}), probedBy: make(chan raft.ServerID, 8)}
	n.verify = newSharedRounds(func() (uint64, error) { return n.confirmLeadership(context.Background()) })
	n.meta.onApply = n.notifyApplied
	rc := cfg.raftConfig()
	n.protocolVersion = rc.ProtocolVersion
	n.timing = timingOf(rc)

	logs, stable, snaps, err := n.openStores(rc)
	if err != nil {
		n.closeStores()
		return nil, err
	}
	n.logs = logs
	snaps = indexedSnapshots{snaps}
	if err := n.openTransport(); err != nil {
		n.closeStores()
		return nil, err
	}
	if cfg.Bootstrap {
		if err := n.bootstrapFresh(rc, logs, stable, snaps); err != nil {
			n.closeStores()
			return nil, err
		}
	}
	r, err := raft.NewRaft(rc, n.meta, logs, stable, snaps, n.transport)
	if err != nil {
		n.closeStores()
		return nil, err
	}
	n.start(r)
	return n, nil
}

// withDefaults is cfg with its zero fields given their defaults.
func (cfg Config) withDefaults() Config {
	if cfg.ApplyTimeout == 0 {
		cfg.ApplyTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: os.Stderr})
	}
	if cfg.SnapshotBytes == 0 {
		cfg.SnapshotBytes = 256 << 20
	}
	if cfg.SnapshotBurstBytes == 0 {
		cfg.SnapshotBurstBytes = 16 << 20
	}
	return cfg
}

// raftConfig is raft's configuration for the node: its timing, then what
// Tune changes.
func (cfg Config) raftConfig() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = cfg.Logger
	rc.SnapshotThreshold = 8192
	rc.TrailingLogs = 10240
	cfg.Timing.apply(rc)
	if cfg.Tune != nil {
		cfg.Tune(rc)
	}
	return rc
}

// openStores opens the log, stable and snapshot stores: in memory
// (InMemory), or BoltDB and snapshot files in the data directory, the log
// behind a cache that replays ahead of raft at start (replayahead.go). The
// caller closes what was opened (closeStores) when it fails.
func (n *Node) openStores(rc *raft.Config) (raft.LogStore, raft.StableStore, raft.SnapshotStore, error) {
	cfg := n.cfg
	if cfg.InMemory {
		mem := raft.NewInmemStore()
		if cfg.DataDir == "" {
			return mem, mem, raft.NewInmemSnapshotStore(), nil
		}
		// raft's in-memory snapshot store hands out the snapshot being
		// written to a follower it installs on (a data race): with a
		// DataDir, snapshots go to files even in memory mode.
		snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, cfg.Logger)
		return mem, mem, snaps, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, nil, nil, err
	}
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path: filepath.Join(cfg.DataDir, "raft.db"),
		// Without freelist sync, writes stay fast after bursts.
		BoltOptions:             &bbolt.Options{Timeout: time.Second, NoFreelistSync: true},
		MsgpackUseNewTimeFormat: true,
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("opening raft log in %s: %w", cfg.DataDir, err)
	}
	n.closers = append(n.closers, bolt.Close)
	cache := newLogCache(512, 64<<10, bolt)
	last, err := bolt.LastIndex()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading raft log in %s: %w", cfg.DataDir, err)
	}
	cache.replay = newReplayAhead(replayAheadBytes, rc.MaxAppendEntries, last, n.meta.applied.Load, n.appliedSignal)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, cfg.Logger)
	if err != nil {
		return nil, nil, nil, err
	}
	return cache, bolt, snaps, nil
}

// openTransport opens the Raft transport (Config.Transport, or TCP with
// the connection limits and TLS configured), counting acknowledgements
// for the read barrier (readacks.go).
func (n *Node) openTransport() error {
	cfg := n.cfg
	trans := cfg.Transport
	if trans == nil {
		limits := DefaultRaftConnLimits
		if cfg.RaftConns != nil {
			limits = *cfg.RaftConns
		}
		if err := limits.Check(); err != nil {
			return err
		}
		tcp, raftLn, err := newTCPTransport(cfg.RaftAddr, cfg.RaftAdvertise, cfg.RaftTLS, limits, cfg.Logger)
		if err != nil {
			return err
		}
		trans = tcp
		n.raftLn = raftLn
		n.closers = append(n.closers, tcp.Close)
	}
	n.rawTransport = trans
	n.transport = trackAcks(trans, n.acks)
	return nil
}

// bootstrapFresh makes stores without Raft state a single-node cluster of
// this node (Config.Bootstrap); stores with state are left as they are.
func (n *Node) bootstrapFresh(rc *raft.Config, logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore) error {
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil || has {
		return err
	}
	conf := raft.Configuration{Servers: []raft.Server{{
		ID: rc.LocalID, Address: n.transport.LocalAddr(), Suffrage: raft.Voter,
	}}}
	if err := raft.BootstrapCluster(rc, logs, stable, snaps, n.transport, conf); err != nil {
		return fmt.Errorf("bootstrapping: %w", err)
	}
	return nil
}

// start takes raft r into service: the log cache learns what raft has
// applied, proposals go to r, and the node's background loops start
// (election order, membership upkeep, the quorum nudge, warm peer
// connections, log compaction, the state and leader watches).
func (n *Node) start(r *raft.Raft) {
	n.raft = r
	if lc, ok := n.logs.(*logCache); ok && lc.replay != nil {
		handed := r.AppliedIndex
		lc.replay.handed.Store(&handed)
	}
	n.proposer.apply = func(data []byte) raft.ApplyFuture { return r.Apply(data, n.cfg.ApplyTimeout) }
	n.timers = &electionTimers{raft: r, base: n.timing}
	n.electAloneNow()
	if !n.cfg.PlainElections {
		n.done.Add(1)
		go n.orderElections()
	}
	n.done.Add(6)
	go n.maintain()
	go n.nudgeElections()
	go n.keepPeerConnsWarm(n.rawTransport)
	go n.compactLog()
	go n.watchState()
	go n.watchLeader()
	if n.raftLn != nil {
		n.done.Add(1)
		go n.tellRaftListenerMembers()
	}
}

// burstCheck is how often compactLog looks whether a burst of log entries
// has gone quiet.
const burstCheck = time.Second

// compactLog takes a Raft snapshot when the FSM signals that the log has
// grown by SnapshotBytes since the last one, and when at least
// SnapshotBurstBytes were applied in busy seconds (at least a sixteenth of
// it in one burstCheck) since the last one, and then a second was not
// busy: an import has ended (its chunks of about a MiB come several a
// second). A steady trickle of small writes, however long, never makes a
// busy second, so it leaves compaction to SnapshotBytes: a snapshot of a
// large state costs seconds of CPU. Each node decides from what it
// applied, so followers compact too; the state does not depend on when.
func (n *Node) compactLog() {
	defer n.done.Done()
	var tick <-chan time.Time
	if burst := n.cfg.SnapshotBurstBytes; burst > 0 {
		t := time.NewTicker(burstCheck)
		defer t.Stop()
		tick = t.C
	}
	burst := burstWatch{bytes: n.cfg.SnapshotBurstBytes}
	for {
		select {
		case <-n.stop:
			return
		case <-n.meta.compact:
		case <-tick:
			if !burst.ended(n.meta.sinceSnapshot.Load()) {
				continue
			}
		}
		if err := n.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			n.cfg.Logger.Warn("snapshot after a large log growth failed", "error", err)
		}
		burst.snapshotted(n.meta.sinceSnapshot.Load())
	}
}

// electAloneNow starts the election at once when this node is the only
// voter (a fresh or restarted single-node cluster), so it serves writes
// right after start instead of after a heartbeat timeout (1-2 s):
// electionTimers.checkNow wakes the follower loop at once and leaves the
// timeouts as configured, so the node keeps them (and the lease) when
// peers join. Shortening the timeouts instead would leave a 100 ms leader
// lease, which ReloadConfig cannot restore, and make a multi-node leader
// step down.
func (n *Node) electAloneNow() {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return
	}
	servers := fut.Configuration().Servers
	if len(servers) != 1 || servers[0].ID != raft.ServerID(n.cfg.NodeID) || servers[0].Suffrage != raft.Voter {
		return
	}
	n.timers.checkNow(false)
}

// RaftAddr is the address the node's transport listens on.
func (n *Node) RaftAddr() string { return string(n.transport.LocalAddr()) }

// WaitLeader waits until some node is leader, or ctx ends.
func (n *Node) WaitLeader(ctx context.Context) error {
	for {
		if addr, _ := n.raft.LeaderWithID(); addr != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// IsLeader reports whether this node is the leader now.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Apply proposes cmd and returns its result: the command's value, its
// *state.Error rejection, ErrNotLeader or ErrUnknownOutcome.
func (n *Node) Apply(ctx context.Context, cmd state.Command) (any, error) {
	data, err := fsm.Encode(cmd, time.Now())
	if err != nil {
		return nil, err
	}
	if err := n.checkEntryFormat(fsm.EntryVersionOf(cmd)); err != nil {
		return nil, err
	}
	if err := n.awaitLeadership(ctx); err != nil {
		return nil, err
	}
	n.gate.RLock()
	if n.gateClosed || n.handingOver > 0 {
		n.gate.RUnlock()
		return nil, ErrNotLeader
	}
	n.proposing.Add(1)
	n.gate.RUnlock()
	defer n.proposing.Add(-1)
	res, err := n.proposer.propose(data)
	if err != nil {
		switch {
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress),
			errors.Is(err, raft.ErrEnqueueTimeout):
			// Refused before it reached the log.
			return nil, ErrNotLeader
		default:
			return nil, fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
		}
	}
	return res.Value, res.Err
}

// GroupCommit returns how many Raft log entries this node has proposed for
// writes and how many commands they held (group commit puts several in
// one entry under load).
func (n *Node) GroupCommit() (entries, commands uint64) {
	return n.proposer.entries.Load(), n.proposer.commands.Load()
}

// StopWrites makes Apply refuse new commands with ErrNotLeader (nothing
// reaches the log, so a retry elsewhere is safe) and waits, bounded by
// ctx, until every command already proposed has its result. A graceful
// stop calls it before transferring leadership.
func (n *Node) StopWrites(ctx context.Context) error {
	n.gate.Lock()
	n.gateClosed = true
	n.gate.Unlock()
	return n.waitProposed(ctx)
}

// waitProposed waits, bounded by ctx, until no command that passed the
// write gate is waiting for its result. The gate is closed meanwhile, so
// the count only falls; a handover is rare enough to poll for.
func (n *Node) waitProposed(ctx context.Context) error {
	for n.proposing.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// WritesStopped reports whether StopWrites was called or a leadership
// transfer is under way.
func (n *Node) WritesStopped() bool {
	n.gate.RLock()
	defer n.gate.RUnlock()
	return n.gateClosed || n.handingOver > 0
}

// awaitLeadership waits, bounded by the apply timeout, while the cluster
// has no leader yet (a node just started); it fails at once when another
// node leads.
func (n *Node) awaitLeadership(ctx context.Context) error {
	deadline := time.Now().Add(n.cfg.ApplyTimeout)
	for {
		switch n.raft.State() {
		case raft.Leader:
			return nil
		case raft.Shutdown:
			return ErrNotLeader
		}
		if addr, id := n.raft.LeaderWithID(); addr != "" && id != raft.ServerID(n.cfg.NodeID) {
			return ErrNotLeader
		}
		if time.Now().After(deadline) {
			return ErrNotLeader
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// ReadBarrier returns once a read of the local state would see every write
// acknowledged before it was called: leadership is confirmed by a quorum's
// fresh acknowledgements (confirmLeadership) after noting the commit index
// (readIndex), and the state includes that index (a sole voter's own read:
// the index it has exposed to other servers, see readIndex). It counts as
// a confirmation of this node's state (readindex.go). When this node was
// elected again while the index was being confirmed (errTermMoved), it
// notes a new one in its new term.
func (n *Node) ReadBarrier(ctx context.Context) error {
	asked := sinceBoot()
	var commit uint64
	for {
		if err := n.awaitLeadership(ctx); err != nil {
			return err
		}
		var err error
		commit, err = n.readIndex(ctx, "", 0)
		if err == nil {
			break
		}
		if !errors.Is(err, errTermMoved) {
			return err
		}
	}
	if err := n.waitState(ctx, commit); err != nil {
		return err
	}
	n.noteConfirmed(asked)
	return nil
}

// notifyApplied wakes the reads waiting in waitState.
// appliedSignal is closed when the state machine next applies an entry.
func (n *Node) appliedSignal() <-chan struct{} {
	n.appliedMu.Lock()
	defer n.appliedMu.Unlock()
	return n.applied
}

func (n *Node) notifyApplied() {
	n.appliedMu.Lock()
	close(n.applied)
	n.applied = make(chan struct{})
	n.appliedMu.Unlock()
}

// termBarrier makes sure a Barrier has gone through the log in the current
// term, so that everything committed by earlier leaders is applied here,
// and returns that term. Callers share one barrier in flight and wait for
// it only as long as ctx allows: raft's Barrier timeout bounds only its
// enqueueing, and a barrier that does not apply (a state machine held up,
// a log that forged appends confused) must not hold every read past its
// deadline.
func (n *Node) termBarrier(ctx context.Context) (uint64, error) {
	for {
		term := n.currentTerm()
		n.mu.Lock()
		if n.readyTerm == term {
			n.mu.Unlock()
			return term, nil
		}
		b := n.barrierWait
		if b == nil {
			b = &barrierRun{done: make(chan struct{})}
			n.barrierWait = b
			go n.runBarrier(term, b)
		}
		n.mu.Unlock()
		select {
		case <-b.done:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if b.err != nil {
			return 0, ErrNotLeader
		}
	}
}

// barrierRun is one Barrier through the log; err is set before done closes.
type barrierRun struct {
	done chan struct{}
	err  error
}

// runBarrier runs b for term and notes the term ready if it went through.
func (n *Node) runBarrier(term uint64, b *barrierRun) {
	err := n.raft.Barrier(n.cfg.ApplyTimeout).Error()
	n.mu.Lock()
	if err == nil && term > n.readyTerm {
		n.readyTerm = term
	}
	n.barrierWait = nil
	n.mu.Unlock()
	b.err = err
	close(b.done)
}

func (n *Node) currentTerm() uint64 { return n.raft.CurrentTerm() }

// Read returns the state to serve a read from, as fresh as opts ask
// (backend.ReadOptions): after the read barrier for a linearizable read,
// unless the caller confirmed the state already; at once for a stale read,
// and for a bounded one while the newest confirmation is within its bound
// (otherwise after the barrier). The state returned never changes: the
// caller reads it as long as it likes. opts.Served is told its index.
func (n *Node) Read(ctx context.Context, opts backend.ReadOptions) (*state.Store, error) {
	if n.needsBarrier(opts) {
		if err := n.ReadBarrier(ctx); err != nil {
			return nil, err
		}
	}
	s := n.fsm.Version()
	if opts.Served != nil {
		opts.Served.Note(s.LastIndex)
	}
	return s, nil
}

// needsBarrier reports whether a read with opts must wait for the read
// barrier.
func (n *Node) needsBarrier(opts backend.ReadOptions) bool {
	switch {
	case opts.Confirmed, opts.Level == backend.Stale:
		return false
	case opts.Level == backend.Bounded:
		age, ok := n.sinceConfirmed()
		return !ok || age > opts.MaxStaleness
	}
	return true
}

// Shutdown stops Raft and closes the stores.
func (n *Node) Shutdown() error {
	n.stopOnce.Do(func() { close(n.stop) })
	n.done.Wait()
	err := n.raft.Shutdown().Error()
	n.closeStores()
	return err
}

func (n *Node) closeStores() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i]()
	}
	n.closers = nil
}

// verifyLeader confirms leadership with a round that starts after the
// call, shared with concurrent callers (sharedRounds), and returns the
// term the round confirmed: every read is covered by a round begun after
// it noted the commit index. A round costs
// a round trip to a quorum; under load one round serves many reads.
func (n *Node) verifyLeader(ctx context.Context) (uint64, error) {
	return n.verify.join(ctx)
}

// burstWatch tells from the bytes applied since the last snapshot, looked
// at every burstCheck, when a burst of at least bytes has gone quiet: a
// busy tick is one in which at least bytes/16 were applied.
type burstWatch struct {
	bytes int64
	last  int64 // the bytes since the last snapshot at the previous tick
	busy  int64 // bytes applied in busy ticks since the last snapshot
}

// ended takes the bytes applied since the last snapshot at this tick and
// reports whether a snapshot is due: the burst's busy ticks came to bytes
// and this tick was not busy.
func (w *burstWatch) ended(since int64) bool {
	grew := since - w.last
	if grew < 0 { // a snapshot was taken in between
		grew, w.busy = since, 0
	}
	w.last = since
	if grew >= w.bytes/16 {
		w.busy += grew
		return false
	}
	return w.busy >= w.bytes
}

// snapshotted starts counting again after a snapshot.
func (w *burstWatch) snapshotted(since int64) { w.last, w.busy = since, 0 }

// Digest is the hash of the placement state and the index of the last
// command it includes: nodes at the same index must agree.
func (n *Node) Digest() (string, uint64) { return n.fsm.Digest() }

// RaftVerifyLeader is hashicorp/raft's own leadership check, which the read
// barrier replaced because it counts replies to heartbeats sent before the
// read (readacks.go): the benchmarks compare the two.
func (n *Node) RaftVerifyLeader() error { return n.raft.VerifyLeader().Error() }

// SnapshotNow takes a Raft snapshot at once, as the node does after a
// large growth of its log (compactLog), and compacts the log.
func (n *Node) SnapshotNow() error { return n.raft.Snapshot().Error() }
