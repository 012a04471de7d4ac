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
// leading, hand leadership over (or leave), shut Raft down.
func runNode(c *serveConfig, id string, authz httpapi.Authorizer, log *slog.Logger) error {
	cf := &c.cluster
	gcCtx, stopGC := context.WithCancel(context.Background())
	defer stopGC()
	go gcfloor.Run(gcCtx, uint64(c.gcHeapFloorMB)<<20, log)
	joins := splitList(cf.join)
	if len(joins) > 0 && cf.secret == "" {
		return errors.New("--join needs --cluster-secret (the secret the cluster was started with)")
	}
	if n := cf.bootstrapExpect; n != 0 && (n < 0 || len(dedupe(joins)) != n) {
		return fmt.Errorf("--bootstrap-expect %d: --join must list exactly that many addresses, not %d", n, len(dedupe(joins)))
	}
	if err := c.security.checkRaftPeers(joins, cf.bootstrapExpect, 0); err != nil {
		return err
	}
	pending := filepath.Join(c.dataDir, cluster.PendingRestore)
	_, statErr := os.Stat(pending)
	restoring := statErr == nil
	if restoring && len(joins) > 0 {
		return fmt.Errorf("%s holds a restored snapshot, which starts a new cluster: start it without --join, then join the others to it", c.dataDir)
	}

	machine := fsm.New()
	mtr := newMetrics(machine, log)
	// Listen first: with port 0 the advertised address needs the port.
	ln, err := net.Listen("tcp", c.httpAddr)
	if err != nil {
		return err
	}
	httpAdv, err := advertiseAddr(cf.httpAdvertise, ln.Addr().String())
	if err != nil {
		ln.Close()
		return err
	}
	var metricsLn net.Listener
	if c.metricsAddr != "" {
		if metricsLn, err = net.Listen("tcp", c.metricsAddr); err != nil {
			ln.Close()
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		defer metricsLn.Close()
	}
	if c.pprofAddr != "" {
		stopPprof, err := servePprof(c.pprofAddr, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopPprof()
	}
	sec := &c.security
	limits, err := c.httpLimits.limits(c.requestTimeout)
	if err != nil {
		ln.Close()
		return err
	}
	ln = apiListener(ln, limits, sec.apiTLS, mtr)

	timing, err := cf.raftTiming()
	if err != nil {
		ln.Close()
		return err
	}
	node, err := cluster.Open(cluster.Config{
		NodeID: id, RaftAddr: c.raftAddr, RaftAdvertise: cf.raftAdvertise, HTTPAddr: httpAdv,
		DataDir: c.dataDir, RaftTLS: sec.raftTLS, APITLS: sec.peerAPITLS, RaftConns: &cf.raftConns,
		// A fresh node given --join waits to be added instead.
		Bootstrap:          len(joins) == 0,
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
	if err != nil {
		ln.Close()
		return err
	}
	// A cluster the Raft state knows is multi-node needs an authenticated
	// Raft port too (say a node restarted without its secret). Only known
	// once the state is open; nothing has been served yet.
	if fut := node.Raft.GetConfiguration(); fut.Error() == nil {
		if err := c.security.checkRaftPeers(nil, 0, len(fut.Configuration().Servers)); err != nil {
			ln.Close()
			node.Shutdown()
			return err
		}
	}
	if restoring {
		if err := restorePending(node, pending, log); err != nil {
			ln.Close()
			node.Shutdown()
			return err
		}
	}

	defer mtr.WatchNode(node, c.dataDir)()
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
	front := node.Handler(api, cluster.HandlerOptions{Secret: cf.secret, SecretNext: cf.secretNext, Logger: log, LeaderRegions: splitList(cf.leaderRegions)})
	frontCtx, stopFront := context.WithCancel(context.Background())
	defer stopFront()
	go front.Run(frontCtx)
	var handler http.Handler = withProbes(front, mtr)
	if sec.apiTLS != nil {
		handler = markTLS(handler)
	}
	srv := limits.Server(handler)
	log.Info("placementd serving", "node", id, "http", ln.Addr().String(), "http_advertise", httpAdv,
		"raft", node.RaftAddr(), "data_dir", c.dataDir, "api_tls", sec.apiTLS != nil, "raft_tls", sec.raftTLS != nil,
		"region", cf.region, "zone", cf.zone, "raft_heartbeat", timing.Heartbeat, "raft_election", timing.Election,
		"raft_leader_lease", timing.LeaderLease, "raft_commit", timing.Commit,
		"max_connections", limits.MaxConns, "max_connections_per_ip", limits.MaxConnsPerIP,
		"read_timeout", limits.ReadTimeout, "write_timeout", limits.WriteTimeout, "idle_timeout", limits.IdleTimeout)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if metricsLn != nil {
		msrv := limits.Server(metricsHandler(mtr))
		go msrv.Serve(httpguard.Listen(metricsLn, limits, nil, nil))
		defer msrv.Close()
		log.Info("serving /metrics", "metrics", metricsLn.Addr().String())
	}

	// Join, or announce this node again (its address may have changed, or
	// it left on its last shutdown). The only member of its own cluster
	// has nobody to announce itself to.
	joinCtx, stopJoin := context.WithCancel(context.Background())
	defer stopJoin()
	targets := append(append(joins, node.PeerHTTPAddrs()...), readPeers(c.dataDir)...)
	// With --bootstrap-expect, a fresh node that --join lists forms the
	// cluster with the others listed first, then announces its address
	// like any member.
	bootstrap := cf.bootstrapExpect > 0 && !node.HasState() && slices.Contains(joins, httpAdv)
	if cf.secret != "" && len(targets) > 0 && !(len(joins) == 0 && node.Alone()) {
		go func() {
			if bootstrap {
				if err := node.BootstrapExpected(joinCtx, dedupe(joins), cf.secret); err != nil {
					if joinCtx.Err() == nil {
						log.Error("forming the cluster failed", "error", err)
					}
					return
				}
			}
			if err := node.JoinCluster(joinCtx, dedupe(targets), cf.secret, cf.nonVoter); err != nil {
				if joinCtx.Err() == nil {
					log.Error("joining the cluster failed", "error", err)
					if errors.Is(err, cluster.ErrWrongNextSecret) || strings.Contains(err.Error(), cluster.ErrWrongNextSecret.Error()) {
						// A configuration error only the operator can fix:
						// stop rather than run with a secret that will cut
						// this node off at the next step of the rotation.
						select {
						case errc <- err:
						default: // already stopping
						}
					}
				}
				return
			}
			log.Info("joined the cluster", "node", id)
			writePeers(c.dataDir, node)
			// A leader of 0.9.0 drops this node's report of its build:
			// announce it again to later leaders until it is in the table.
			node.KeepReported(joinCtx, cf.secret)
		}()
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	select {
	case err = <-errc:
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
		stopFront()
		err = gracefulStop(node, front, srv, cf, log)
	}
	stopJoin()
	writePeers(c.dataDir, node)
	if serr := node.Shutdown(); err == nil || errors.Is(err, http.ErrServerClosed) {
		err = serr
	}
	return err
}

func gracefulStop(node *cluster.Node, front *cluster.Handler, srv *http.Server, cf *clusterFlags, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), cf.shutdownTimeout)
	defer cancel()
	// Load balancers polling /readyz stop sending traffic. Writes already
	// proposed finish while this node still leads; new ones wait for the
	// next leader and are forwarded to it, so none ends with an unknown
	// outcome because of the hand-over.
	front.SetDraining(true)
	if err := node.StopWrites(ctx); err != nil {
		log.Warn("waiting for proposed writes", "error", err)
	}
	left := false
	if cf.leaveOnShutdown && cf.secret != "" {
		if lerr := node.Leave(ctx, cf.secret); lerr != nil {
			log.Warn("leaving the cluster failed; staying a member", "error", lerr)
		} else {
			left = true
			if !node.Alone() {
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
