package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/cluster/metrics"
	"github.com/placementd/placementd/cmd/placementd/gcfloor"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/httpapi/httpguard"
)

// peersFile remembers the API addresses of the other members, so a node
// that left on shutdown (or whose peers moved) can join again on restart
// without --join.
const peersFile = "peers.json"

// runNode runs one cluster member until SIGINT/SIGTERM, then stops it
// gracefully: fail readiness, drain in-flight requests while still
// leading, hand leadership over (or leave), shut Raft down. The steps:
// check the flags, listen, open the node, serve the API through the
// cluster front, join the cluster in the background, wait for a signal.
func runNode(c *serveConfig, id string, authz httpapi.Authorizer, log *slog.Logger) error {
	cf := &c.cluster
	gcCtx, stopGC := context.WithCancel(context.Background())
	defer stopGC()
	go gcfloor.Run(gcCtx, uint64(c.gcHeapFloorMB)<<20, log)
	joins := splitList(cf.join)
	pending, restoring, err := checkStart(c, joins)
	if err != nil {
		return err
	}
	machine := fsm.New()
	machine.OnUndecodable = stopOnUndecodable(log)
	mtr := newMetrics(machine, log)
	ls, err := listen(c, mtr, log)
	if err != nil {
		return err
	}
	defer ls.close()
	timing, err := cf.raftTiming()
	if err != nil {
		return err
	}
	node, err := openNode(c, id, ls.httpAdv, len(joins) == 0, timing, machine, log)
	if err != nil {
		return err
	}
	if err := checkOpened(c, node, pending, restoring, log); err != nil {
		node.Shutdown()
		return err
	}
	defer mtr.WatchNode(node, c.dataDir)()
	fr, srv := serveAPI(c, node, authz, mtr, ls, log)
	frontCtx, stopFront := context.WithCancel(context.Background())
	defer stopFront()
	go fr.Run(frontCtx)
	log.Info("placementd serving", "node", id, "http", ls.api.Addr().String(), "http_advertise", ls.httpAdv,
		"raft", node.RaftAddr(), "data_dir", c.dataDir, "api_tls", c.security.apiTLS != nil, "raft_tls", c.security.raftTLS != nil,
		"region", cf.region, "zone", cf.zone, "raft_heartbeat", timing.Heartbeat, "raft_election", timing.Election,
		"raft_leader_lease", timing.LeaderLease, "raft_commit", timing.Commit,
		"max_connections", ls.limits.MaxConns, "max_connections_per_ip", ls.limits.MaxConnsPerIP,
		"read_timeout", ls.limits.ReadTimeout, "write_timeout", ls.limits.WriteTimeout, "idle_timeout", ls.limits.IdleTimeout)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ls.api) }()
	if ls.metrics != nil {
		msrv := ls.limits.Server(metricsHandler(mtr, metricsAccessOf(c)))
		go msrv.Serve(httpguard.Listen(ls.metrics, ls.limits.Side(), httpapi.ConnRefusal(), nil))
		defer msrv.Close()
		log.Info("serving /metrics", "metrics", ls.metrics.Addr().String())
	}
	joinCtx, stopJoin := context.WithCancel(context.Background())
	defer stopJoin()
	joinInBackground(joinCtx, c, node, joins, ls.httpAdv, errc, log)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err = <-errc:
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
		stopFront()
		err = gracefulStop(node, fr, srv, cf, log)
	}
	stopJoin()
	writePeers(c.dataDir, node)
	if serr := node.Shutdown(); err == nil || errors.Is(err, http.ErrServerClosed) {
		err = serr
	}
	return err
}

// checkStart checks the cluster flags against each other and the data
// dir before anything starts. pending is where a restored snapshot waits
// (`placementd snapshot restore`); restoring says that one does.
func checkStart(c *serveConfig, joins []string) (pending string, restoring bool, err error) {
	cf := &c.cluster
	if len(joins) > 0 && cf.secret == "" {
		return "", false, errors.New("--join needs --cluster-secret (the secret the cluster was started with)")
	}
	if n := cf.bootstrapExpect; n != 0 && (n < 0 || len(dedupe(joins)) != n) {
		return "", false, fmt.Errorf("--bootstrap-expect %d: --join must list exactly that many addresses, not %d", n, len(dedupe(joins)))
	}
	if err := c.security.checkRaftPeers(joins, cf.bootstrapExpect, 0); err != nil {
		return "", false, err
	}
	pending = filepath.Join(c.dataDir, cluster.PendingRestore)
	_, statErr := os.Stat(pending)
	restoring = statErr == nil
	if restoring && len(joins) > 0 {
		return "", false, fmt.Errorf("%s holds a restored snapshot, which starts a new cluster: start it without --join, then join the others to it", c.dataDir)
	}
	return pending, restoring, nil
}

// listeners are what serve listens on before the node opens (with port 0
// the advertised address needs the port).
type listeners struct {
	api       net.Listener // the API's, with its caps and TLS (apiListener)
	httpAdv   string       // the API address other members reach
	metrics   net.Listener // --metrics-addr; nil without
	limits    httpguard.Limits
	stopPprof func()
}

// listen opens the API's listener (and --metrics-addr's, and
// --pprof-addr's server).
func listen(c *serveConfig, mtr *metrics.Metrics, log *slog.Logger) (ls *listeners, err error) {
	ls = &listeners{stopPprof: func() {}}
	defer func() {
		if err != nil {
			ls.close()
		}
	}()
	limits, err := c.httpLimits.limits(c.requestTimeout)
	if err != nil {
		return ls, err
	}
	ls.limits = limits
	if ls.api, err = net.Listen("tcp", c.httpAddr); err != nil {
		return ls, err
	}
	if ls.httpAdv, err = advertiseAddr(c.cluster.httpAdvertise, ls.api.Addr().String()); err != nil {
		return ls, err
	}
	if c.metricsAddr != "" {
		if ls.metrics, err = net.Listen("tcp", c.metricsAddr); err != nil {
			return ls, fmt.Errorf("--metrics-addr: %w", err)
		}
	}
	if c.pprofAddr != "" {
		if ls.stopPprof, err = servePprof(c.pprofAddr, log); err != nil {
			ls.stopPprof = func() {}
			return ls, err
		}
	}
	ls.api = apiListener(ls.api, limits, c.security.apiTLS, mtr)
	return ls, nil
}

// close closes what listen opened (the API's listener again after the
// server closed it does no harm).
func (ls *listeners) close() {
	if ls.api != nil {
		ls.api.Close()
	}
	if ls.metrics != nil {
		ls.metrics.Close()
	}
	ls.stopPprof()
}

// openNode opens the Raft node over machine. A fresh node that is to join
// (bootstrap false: --join) waits to be added instead of bootstrapping.
func openNode(c *serveConfig, id, httpAdv string, bootstrap bool, timing cluster.Timing, machine *fsm.FSM, log *slog.Logger) (*cluster.Node, error) {
	cf := &c.cluster
	sec := &c.security
	return cluster.Open(cluster.Config{
		NodeID: id, RaftAddr: c.raftAddr, RaftAdvertise: cf.raftAdvertise, HTTPAddr: httpAdv,
		DataDir: c.dataDir, RaftTLS: sec.raftTLS, APITLS: sec.peerAPITLS, RaftConns: &cf.raftConns,
		Bootstrap:          bootstrap,
		Logger:             raftLogger(log),
		SnapshotBytes:      snapshotBytes(cf.snapshotLogMB),
		SnapshotBurstBytes: snapshotBytes(cf.snapshotBurstMB),
		Timing:             timing,
		Region:             cf.region, Zone: cf.zone,
		PlainElections: !cf.orderedElections,
		BuildVersion:   buildVersion(),
		SecretIDs:      cf.secretIDs,
		Tune: func(rc *raft.Config) {
			rc.SnapshotThreshold = cf.snapshotThreshold
			rc.SnapshotInterval = cf.snapshotInterval
			rc.TrailingLogs = cf.trailingLogs
			// Let proposals queue while a batch is being written, so the
			// leader commits them together: one fsync and one round trip
			// for many claims.
			rc.BatchApplyCh = true
			rc.MaxAppendEntries = 256
		},
	}, machine)
}

// checkOpened refuses a node whose Raft state says it is one of several
// members when its Raft port is not authenticated (say a node restarted
// without its secret; only known once the state is open, before anything
// is served), and installs a pending restored snapshot.
func checkOpened(c *serveConfig, node *cluster.Node, pending string, restoring bool, log *slog.Logger) error {
	if members, err := node.Members(); err == nil {
		if err := c.security.checkRaftPeers(nil, 0, len(members)); err != nil {
			return err
		}
	}
	if restoring {
		return restorePending(node, pending, log)
	}
	return nil
}

// serveAPI builds the Placement API over node, the cluster front before
// it and the HTTP server of both (not serving yet).
func serveAPI(c *serveConfig, node *cluster.Node, authz httpapi.Authorizer, mtr *metrics.Metrics, ls *listeners, log *slog.Logger) (*front.Handler, *http.Server) {
	cf := &c.cluster
	apiCfg := httpapi.Config{
		IncompleteConsumerProjectID: c.incompleteProject,
		IncompleteConsumerUserID:    c.incompleteUser,
		CORSAllowedOrigins:          splitList(c.corsAllowedOrigin),
		CORSAllowHeaders:            splitList(c.corsAllowHeaders),
		Logger:                      log,
		Authorizer:                  authz,
		Keystone:                    c.security.apiKeystone,
		Observer:                    mtr,

		RandomizeAllocationCandidates: c.candidates.randomize,
		MaxAllocationCandidates:       c.candidates.max,
		AllocationCandidatesStrategy:  c.candidates.strategy,
		CandidatesMaxBytes:            c.candidates.memoryMB << 20,
		RequestTimeout:                c.requestTimeout,
	}
	c.httpLimits.apiLimits(&apiCfg)
	api := httpapi.New(mtr.Backend(node), apiCfg)
	fr := front.New(node, api, front.Options{Secret: cf.secret, SecretNext: cf.secretNext, Logger: log, LeaderRegions: splitList(cf.leaderRegions)})
	var handler http.Handler = withProbes(fr, mtr, metricsAccessOf(c))
	if c.security.apiTLS != nil {
		handler = markTLS(handler)
	}
	return fr, ls.limits.Server(handler)
}

// joinInBackground joins the cluster, or announces this node again (its
// address may have changed, or it left on its last shutdown), until ctx
// ends. The only member of its own cluster has nobody to announce itself
// to. With --bootstrap-expect, a fresh node that --join lists forms the
// cluster with the others listed first, then announces its address like
// any member.
func joinInBackground(ctx context.Context, c *serveConfig, node *cluster.Node, joins []string, httpAdv string, fatal chan<- error, log *slog.Logger) {
	cf := &c.cluster
	targets := append(append(joins, node.PeerHTTPAddrs()...), readPeers(c.dataDir)...)
	bootstrap := cf.bootstrapExpect > 0 && !node.HasState() && slices.Contains(joins, httpAdv)
	if cf.secret == "" || len(targets) == 0 || (len(joins) == 0 && node.Alone()) {
		return
	}
	go func() {
		if bootstrap {
			if err := front.BootstrapExpected(ctx, node, dedupe(joins), cf.secret); err != nil {
				if ctx.Err() == nil {
					log.Error("forming the cluster failed", "error", err)
				}
				return
			}
		}
		if err := joinLogged(ctx, node, dedupe(targets), cf.secret, cf.nonVoter, log); err != nil {
			if ctx.Err() == nil {
				log.Error("joining the cluster failed", "error", err)
				if errors.Is(err, cluster.ErrWrongNextSecret) || strings.Contains(err.Error(), cluster.ErrWrongNextSecret.Error()) {
					// A configuration error only the operator can fix:
					// stop rather than run with a secret that will cut
					// this node off at the next step of the rotation.
					select {
					case fatal <- err:
					default: // already stopping
					}
				}
			}
			return
		}
		log.Info("joined the cluster", "node", node.ID())
		writePeers(c.dataDir, node)
		// A leader of 0.9.0 drops this node's report of its build:
		// announce it again to later leaders until it is in the table.
		front.KeepReported(ctx, node, cf.secret)
	}()
}

func gracefulStop(node *cluster.Node, fr *front.Handler, srv *http.Server, cf *clusterFlags, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), cf.shutdownTimeout)
	defer cancel()
	// Load balancers polling /readyz stop sending traffic. Writes already
	// proposed finish while this node still leads; new ones wait for the
	// next leader and are forwarded to it, so none ends with an unknown
	// outcome because of the hand-over.
	fr.SetDraining(true)
	if err := node.StopWrites(ctx); err != nil {
		log.Warn("waiting for proposed writes", "error", err)
	}
	left := false
	// A node that never joined has nothing to leave (Leave does nothing
	// for it) and must not say it left.
	member := node.IsMember()
	if cf.leaveOnShutdown && cf.secret != "" {
		if lerr := front.Leave(ctx, node, cf.secret); lerr != nil {
			log.Warn("leaving the cluster failed; staying a member", "error", lerr)
		} else {
			left = true
			if member && !node.Alone() {
				log.Info("left the cluster")
			}
		}
	}
	if !left {
		if terr := node.TransferLeadership(); terr != nil {
			log.Warn("transferring leadership failed", "error", terr)
		}
	}
	// Give the other members a heartbeat to learn the new leader before
	// the connections they forwarded on are closed.
	if !node.Alone() {
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return srv.Shutdown(ctx)
}

// restorePending installs the snapshot `placementd snapshot restore` left
// in the data dir, before any request is served.
func restorePending(node *cluster.Node, path string, log *slog.Logger) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	digest, _, err := fsm.InspectSnapshot(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for !node.IsLeader() {
		if ctx.Err() != nil {
			return errors.New("restoring a snapshot: this node did not become leader; is the data dir a fresh single-node one?")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := node.RestoreBackup(data); err != nil {
		return fmt.Errorf("restoring %s: %w", path, err)
	}
	log.Info("restored snapshot", "file", path, "digest", digest)
	return os.Remove(path)
}

// apiListener stacks the API's listeners over the TCP one: the connection
// caps, counting sockets (under TLS: a refused connection costs no
// handshake, and gets no answer it could read), then TLS when configured,
// then FixContentLength, which answers a non-numeric Content-Length as
// upstream does rather than with Go's bare 400 (it reads the decrypted
// stream).
func apiListener(ln net.Listener, limits httpguard.Limits, tlsConfig *tls.Config, mtr *metrics.Metrics) net.Listener {
	var refusal []byte
	if tlsConfig == nil {
		refusal = httpapi.ConnRefusal()
	}
	guard := httpguard.Listen(ln, limits, refusal, mtr.ConnRefused)
	mtr.WatchConnections(guard.Open)
	ln = guard
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	return httpapi.FixContentLength(ln)
}

// markTLS sets r.TLS on requests that came over the TLS listener. The
// FixContentLength wrapper hides the *tls.Conn from http.Server, which
// then leaves r.TLS nil; the API reads it to write https:// in absolute
// Location headers. The state is a placeholder: nothing here reads the
// peer's certificates (the API does not ask for client certificates).
func markTLS(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			r = r.WithContext(r.Context())
			r.TLS = &tls.ConnectionState{HandshakeComplete: true}
		}
		h.ServeHTTP(w, r)
	})
}

// advertiseAddr is the configured address, or the bound one with the
// hostname in place of an unspecified IP.
func advertiseAddr(configured, bound string) (string, error) {
	if configured != "" {
		if _, _, err := net.SplitHostPort(configured); err != nil {
			return "", fmt.Errorf("--http-advertise %q: %w", configured, err)
		}
		return configured, nil
	}
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		if host, err = os.Hostname(); err != nil {
			return "", fmt.Errorf("--http-advertise is needed: %w", err)
		}
	}
	return net.JoinHostPort(host, port), nil
}

func readPeers(dataDir string) []string {
	var peers []string
	if b, err := os.ReadFile(filepath.Join(dataDir, peersFile)); err == nil {
		json.Unmarshal(b, &peers)
	}
	return peers
}

func writePeers(dataDir string, node *cluster.Node) {
	peers := node.PeerHTTPAddrs()
	if len(peers) == 0 {
		return
	}
	b, _ := json.Marshal(peers)
	tmp := filepath.Join(dataDir, peersFile+".tmp")
	if os.WriteFile(tmp, b, 0o640) == nil {
		os.Rename(tmp, filepath.Join(dataDir, peersFile))
	}
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// snapshotBytes turns --snapshot-log-mb or --snapshot-burst-mb into
// cluster.Config's SnapshotBytes or SnapshotBurstBytes (0 there means the
// default; here it means off).
func snapshotBytes(mb int64) int64 {
	if mb <= 0 {
		return -1
	}
	return mb << 20
}
