package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cmd/placementd/gcfloor"
	"github.com/placementd/placementd/httpapi"
)

type serveConfig struct {
	httpAddr, raftAddr, nodeID, dataDir string
	policyFile, policyDirs              string
	upstream                            upstreamConfig
	policyEnforceNewDefaults            bool
	policyEnforceScope                  bool
	corsAllowedOrigin, corsAllowHeaders string
	incompleteProject, incompleteUser   string
	authStrategy                        string
	noauth2InsecureRemote               bool
	logFormat, logLevel                 string
	metricsAddr, metricsToken           string
	pprofAddr                           string
	gcHeapFloorMB                       int
	requestTimeout                      time.Duration
	candidates                          candidateFlags
	cluster                             clusterFlags
	security                            securityFlags
	httpLimits                          httpLimitFlags
}

// candidateFlags are upstream's [placement] options for GET
// /allocation_candidates.
type candidateFlags struct {
	randomize bool
	max       int
	strategy  string
	memoryMB  int64
}

// clusterFlags are the serve flags about the Raft group.
type clusterFlags struct {
	join                         string
	bootstrapExpect              int
	secret                       string
	secretNext                   string
	secretIDs                    []string // of secret and secretNext, when rotating (checkSecretNext)
	nonVoter                     bool
	raftAdvertise, httpAdvertise string
	snapshotThreshold            uint64
	snapshotLogMB                int64
	snapshotBurstMB              int64
	snapshotInterval             time.Duration
	trailingLogs                 uint64
	leaveOnShutdown              bool
	shutdownTimeout              time.Duration
	timingMultiplier             float64
	timing                       cluster.Timing
	orderedElections             bool
	raftConns                    cluster.RaftConnLimits
	region, zone                 string
	leaderRegions                string
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.join, "join", "", "comma-separated API addresses (host:port) of members of a cluster to join; a fresh node without --join starts a new single-node cluster")
	fs.IntVar(&c.bootstrapExpect, "bootstrap-expect", 0, "form a new cluster of this many voters at once: --join lists exactly those nodes, and each fresh node among them starts the cluster with all of them once every one answers with no Raft state (any with state: join instead); for nodes given the same flags, such as a StatefulSet's pods")
	fs.StringVar(&c.secret, "cluster-secret", "", "shared secret of the cluster: needed to join and for the operator API (/_cluster/...); give every node the same. On a command line it shows in ps: set PLACEMENTD_CLUSTER_SECRET or put it in the --config file instead")
	fs.StringVar(&c.secretNext, "cluster-secret-next", "", "a second cluster secret accepted beside --cluster-secret (Raft TLS, joins, operator API, member tokens) while the secret is rotated: give every node the same one, then make it every node's --cluster-secret (docs/operators-guide.md, Rotating the cluster secret)")
	fs.BoolVar(&c.nonVoter, "non-voter", false, "join as a non-voting member (a read replica, e.g. in a remote region)")
	fs.StringVar(&c.raftAdvertise, "raft-advertise", "", "Raft address other nodes dial (default: --raft-addr, which must then be a specific IP)")
	fs.StringVar(&c.httpAdvertise, "http-advertise", "", "API address other nodes forward requests to (default: --http-addr, or the hostname with its port when it binds all interfaces)")
	fs.Uint64Var(&c.snapshotThreshold, "snapshot-threshold", 8192, "take a Raft snapshot (and compact the log) after this many new log entries")
	fs.Int64Var(&c.snapshotLogMB, "snapshot-log-mb", 256, "also take a Raft snapshot once this many MiB of log entries were applied since the last one, however few (an import's large chunks); 0: only --snapshot-threshold")
	fs.Int64Var(&c.snapshotBurstMB, "snapshot-burst-mb", 16, "also take a Raft snapshot once at least this many MiB of log entries were applied since the last one in busy seconds (a sixteenth of that or more each) and then a second was not (the end of an import), so a restart does not replay them; 0: off")
	fs.DurationVar(&c.snapshotInterval, "snapshot-interval", 2*time.Minute, "how often to check --snapshot-threshold")
	fs.Uint64Var(&c.trailingLogs, "trailing-logs", 10240, "log entries kept after a snapshot, so a slightly lagging node catches up without a snapshot install")
	fs.BoolVar(&c.leaveOnShutdown, "leave-on-shutdown", true, "on SIGTERM/SIGINT, leave the cluster (the last voter never leaves); a node restarted with --join, or with known peers, joins again")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 15*time.Second, "bound on a graceful shutdown: draining requests, transferring leadership, leaving")
	fs.Float64Var(&c.timingMultiplier, "raft-timing-multiplier", 1, "scales the Raft heartbeat, election and leader-lease timeouts (1: 1s, 1s, 500ms); lower fails over faster, higher tolerates slower links (docs/cluster.md gives values per RTT)")
	fs.DurationVar(&c.timing.Heartbeat, "raft-heartbeat-timeout", 0, "Raft heartbeat timeout: a follower that hears nothing from the leader this long starts an election (0: from --raft-timing-multiplier)")
	fs.DurationVar(&c.timing.Election, "raft-election-timeout", 0, "Raft election timeout, at least the heartbeat timeout (0: from --raft-timing-multiplier)")
	fs.DurationVar(&c.timing.LeaderLease, "raft-leader-lease-timeout", 0, "a leader that hears from no quorum this long steps down; at most the heartbeat timeout (0: from --raft-timing-multiplier)")
	fs.DurationVar(&c.timing.Commit, "raft-commit-timeout", 0, "how often an idle leader still sends followers the commit index; below the heartbeat timeout (0: 50ms)")
	fs.BoolVar(&c.orderedElections, "raft-ordered-elections", true, "when the leader goes silent, the voters campaign in an order all of them compute (the first checks after 1.1 heartbeat timeouts, the others wait for its campaign): faster failover without split votes; false leaves it to raft's random timers (docs/cluster.md)")
	d := cluster.DefaultRaftConnLimits
	fs.DurationVar(&c.raftConns.Handshake, "raft-handshake-timeout", d.Handshake, "an inbound Raft connection that has not finished its TLS handshake this long after connecting is closed")
	fs.DurationVar(&c.raftConns.FirstMessage, "raft-first-message-timeout", d.FirstMessage, "an inbound Raft connection that has sent no RPC this long after its handshake (or after connecting, without TLS) is closed")
	fs.IntVar(&c.raftConns.MaxPending, "raft-max-pending-connections", d.MaxPending, "cap on inbound Raft connections in handshake or waiting for their first RPC; past it new ones are closed at once (half kept for the members' addresses)")
	fs.IntVar(&c.raftConns.MaxOpen, "raft-max-connections", d.MaxOpen, "cap on inbound Raft connections held by Raft (a peer keeps a handful); past it new ones are closed (half kept for the members' addresses)")
	fs.IntVar(&c.raftConns.MaxPerSource, "raft-max-connections-per-ip", d.MaxPerSource, "cap on inbound Raft connections from one IP address, pending and held alike, so that one source cannot take every place; members sharing an address (one host, a NAT) share it (0: no cap)")
	fs.StringVar(&c.region, "region", "", "region of this node (a label: cluster status, metrics, --leader-regions and the check that losing one region keeps a quorum)")
	fs.StringVar(&c.zone, "zone", "", "zone of this node within its region (a label)")
	fs.StringVar(&c.leaderRegions, "leader-regions", "", "comma-separated regions the leader should be in, most preferred first: a leader elsewhere hands over to a healthy, caught-up voter of a preferred region (give every node the same list; needs --cluster-secret)")
}

// raftTiming is the timing the flags ask for, checked.
func (c *clusterFlags) raftTiming() (cluster.Timing, error) {
	if c.timingMultiplier <= 0 || c.timingMultiplier > 100 {
		return cluster.Timing{}, fmt.Errorf("--raft-timing-multiplier %v: want more than 0, at most 100", c.timingMultiplier)
	}
	t := cluster.TimingProfile(c.timingMultiplier)
	for _, f := range []struct{ set, dst *time.Duration }{
		{&c.timing.Heartbeat, &t.Heartbeat}, {&c.timing.Election, &t.Election},
		{&c.timing.LeaderLease, &t.LeaderLease}, {&c.timing.Commit, &t.Commit},
	} {
		if *f.set != 0 {
			*f.dst = *f.set
		}
	}
	if err := t.Validate(); err != nil {
		return t, fmt.Errorf("raft timing (--raft-timing-multiplier, --raft-*-timeout): %w", err)
	}
	return t, nil
}

func serveFlags(fs *flag.FlagSet) *serveConfig {
	c := &serveConfig{}
	fs.StringVar(&c.httpAddr, "http-addr", "127.0.0.1:8778", "address the Placement API listens on")
	fs.StringVar(&c.raftAddr, "raft-addr", "127.0.0.1:8779", "address Raft listens on (port 0: any free port)")
	fs.StringVar(&c.nodeID, "node-id", "", "this node's Raft id (default: the hostname, kept in the data dir)")
	fs.StringVar(&c.dataDir, "data-dir", "./data", "directory for the Raft log, snapshots and node identity")
	fs.StringVar(&c.policyFile, "policy-file", "", "oslo.policy YAML/JSON file overriding policy rules")
	fs.StringVar(&c.policyDirs, "policy-dirs", "", "comma-separated directories of more policy files, read after --policy-file in name order, as [oslo_policy] policy_dirs")
	fs.Var(&c.upstream, upstreamConfigFlag, "upstream Placement's placement.conf (oslo.config INI): the options placementd shares with upstream are read from it, the others logged as ignored (docs/deploy.md)")
	fs.BoolVar(&c.policyEnforceNewDefaults, "policy-enforce-new-defaults", false, "use only the new policy defaults, as [oslo_policy] enforce_new_defaults")
	fs.BoolVar(&c.policyEnforceScope, "policy-enforce-scope", true, "refuse tokens whose scope a rule does not allow, as [oslo_policy] enforce_scope")
	fs.StringVar(&c.corsAllowedOrigin, "cors-allowed-origin", "", "comma-separated origins allowed by CORS (empty: no CORS)")
	fs.StringVar(&c.corsAllowHeaders, "cors-allow-headers", "", "comma-separated extra request headers a CORS preflight may allow")
	fs.StringVar(&c.incompleteProject, "incomplete-consumer-project-id", "00000000-0000-0000-0000-000000000000", "project given to consumers written before microversion 1.8")
	fs.StringVar(&c.incompleteUser, "incomplete-consumer-user-id", "00000000-0000-0000-0000-000000000000", "user given to consumers written before microversion 1.8")
	fs.StringVar(&c.authStrategy, "auth-strategy", "noauth2", "authentication: noauth2 (the token is user[:project], for tests) or keystone (tokens validated by Keystone, see --keystone-*)")
	fs.BoolVar(&c.noauth2InsecureRemote, noauth2InsecureRemoteFlag, false, "let --auth-strategy noauth2 (anyone can act as admin) serve a non-loopback --http-addr: test clusters on a trusted network only")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.IntVar(&c.gcHeapFloorMB, "gc-heap-floor-mb", gcfloor.DefaultFloorMB, "let the heap grow by at least this many MiB between garbage collections while the live heap is small (GOGC raised; past twice the floor, by half the live heap: GOGC 50); 0, or GOGC/GOMEMLIMIT in the environment, leaves Go's default")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "also serve /metrics on this address, to anyone unless --metrics-token is set (keep it loopback or private); on --http-addr /metrics needs --metrics-token or the cluster secret, or comes from loopback on a node with neither")
	fs.StringVar(&c.metricsToken, "metrics-token", "", "a bearer token for scrapers that opens /metrics and nothing else (not the operator API, joining, read index or snapshots); must differ from --cluster-secret; prefer PLACEMENTD_METRICS_TOKEN to the command line")
	fs.StringVar(&c.pprofAddr, "pprof-addr", "", "serve Go's runtime profiles (net/http/pprof, /debug/pprof/) on this loopback address, for profiling; off when empty")
	fs.BoolVar(&c.candidates.randomize, "randomize-allocation-candidates", false, "return a random sample of the allocation candidates instead of the first ones in a fixed order, as upstream's [placement] randomize_allocation_candidates")
	fs.IntVar(&c.candidates.max, "max-allocation-candidates", httpapi.DefaultMaxAllocationCandidates, "bound on the candidates an allocation-candidates search generates before limit applies (-1: no bound), as upstream's [placement] max_allocation_candidates (whose default is -1)")
	fs.StringVar(&c.candidates.strategy, "allocation-candidates-generation-strategy", "depth-first", "order in which candidates are generated when bounded: depth-first or breadth-first, as upstream's [placement] allocation_candidates_generation_strategy")
	fs.Int64Var(&c.candidates.memoryMB, "allocation-candidates-memory-mb", httpapi.DefaultCandidatesMaxBytes>>20, "bound, in MiB, on the memory one allocation-candidates answer may take while it is built (estimated from its candidates), and at most --max-answer-mb; a request over it is answered 503 placement.query.too_large (-1: no bound)")
	fs.DurationVar(&c.requestTimeout, "request-timeout", httpapi.DefaultRequestTimeout, "deadline of every API request: past it, reads and searches stop and the request is answered 503 placement.request.timeout")
	c.cluster.register(fs)
	c.security.register(fs)
	c.httpLimits.register(fs)
	return c
}

func newLogger(format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %v", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

// nodeID returns the configured id, or the one this data dir was first
// started with, or a new one (the hostname) remembered in the data dir.
func nodeID(configured, dataDir string) (string, error) {
	path := filepath.Join(dataDir, "node-id")
	if b, err := os.ReadFile(path); err == nil {
		stored := strings.TrimSpace(string(b))
		if configured != "" && configured != stored {
			return "", fmt.Errorf("data dir %s belongs to node %q, not %q", dataDir, stored, configured)
		}
		return stored, nil
	}
	id := configured
	if id == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "node1"
		}
		id = host
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return "", err
	}
	return id, os.WriteFile(path, []byte(id+"\n"), 0o640)
}

func serve(args []string) error {
	fs := flag.NewFlagSet("placementd serve", flag.ContinueOnError)
	c := serveFlags(fs)
	fs.Usage = func() { serveUsage(fs) }
	if err := configure(fs, args, true); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	log, err := newLogger(c.logFormat, c.logLevel)
	if err != nil {
		return err
	}
	c.upstream.logIgnored(log)
	switch c.authStrategy {
	case "noauth2":
		if err := checkNoauth2(c.httpAddr, c.noauth2InsecureRemote, log); err != nil {
			return err
		}
	case "keystone":
		if c.security.apiKeystone, err = c.security.keystoneConfig(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--auth-strategy %q is not supported (noauth2, keystone)", c.authStrategy)
	}
	if s := c.candidates.strategy; s != "depth-first" && s != "breadth-first" {
		return fmt.Errorf("--allocation-candidates-generation-strategy %q: want depth-first or breadth-first", s)
	}
	if err := checkMetricsToken(c.metricsToken, c.cluster.secret); err != nil {
		return err
	}
	if c.gcHeapFloorMB < 0 {
		return fmt.Errorf("--gc-heap-floor-mb %d: want 0 (off) or more", c.gcHeapFloorMB)
	}
	if c.candidates.max == 0 || c.candidates.max < -1 {
		return fmt.Errorf("--max-allocation-candidates %d: want -1 (no bound) or a positive number", c.candidates.max)
	}
	if c.candidates.memoryMB == 0 || c.candidates.memoryMB < -1 {
		return fmt.Errorf("--allocation-candidates-memory-mb %d: want -1 (no bound) or a positive number", c.candidates.memoryMB)
	}
	if c.requestTimeout <= 0 {
		return fmt.Errorf("--request-timeout %s: want a positive duration", c.requestTimeout)
	}
	if _, err := c.httpLimits.limits(c.requestTimeout); err != nil {
		return err
	}
	if err := c.security.loadTLS(); err != nil {
		return err
	}
	if _, err := c.cluster.raftTiming(); err != nil {
		return err
	}
	if err := c.cluster.raftConns.Check(); err != nil {
		return fmt.Errorf("raft connection limits (--raft-*-timeout, --raft-max-*): %w", err)
	}
	// Before nodeID, which writes to the data dir. The certificate names
	// the node only when --node-id does (a label for logs).
	if err := c.security.raftAuth(c.cluster.secret, c.nodeID, c.raftAddr, log); err != nil {
		return err
	}
	if err := c.cluster.checkSecretNext(&c.security); err != nil {
		return err
	}
	id, err := nodeID(c.nodeID, c.dataDir)
	if err != nil {
		return err
	}
	if err := c.security.localRaftTLS(c.dataDir, id, log); err != nil {
		return err
	}
	authz, err := newAuthorizer(c, log)
	if err != nil {
		return err
	}

	return runNode(c, id, authz, log)
}
