package cluster_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/internal/testcluster"
)

// testCA is a certificate authority made at test time.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

var serial int64 = 1

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue makes a node certificate for both ends of a connection, valid for
// 127.0.0.1 (the API's host name is checked; Raft's is not).
func (ca *testCA) issue(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func (ca *testCA) client() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool}}}
}

// tcpTiming is the Raft timing of the nodes over real TCP and TLS: raft's
// defaults, as in production. Under -race on a shared, loaded box (load
// average 40 on 2 cores) shorter timeouts cost the leader its lease in
// the middle of the tests, which then write to a node no longer leading.
func tcpTiming(rc *raft.Config) {
	rc.HeartbeatTimeout = time.Second
	rc.ElectionTimeout = time.Second
	rc.LeaderLeaseTimeout = 500 * time.Millisecond
}

// tlsNode is a node over real TCP: Raft with mutual TLS, the real API
// behind the cluster front on an HTTPS listener.
type tlsNode struct {
	ID   string
	Node *cluster.Node
	Addr string // API host:port
}

// startTLSNode starts a node whose Raft certificate comes from raftCA and
// whose API certificate comes from apiCA, which it also trusts for its
// peers' APIs. with may adjust its API server before it starts.
func startTLSNode(t *testing.T, id string, bootstrap bool, raftCA, apiCA *testCA, with ...func(*http.Server)) *tlsNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	node, err := cluster.Open(cluster.Config{
		NodeID: id, RaftAddr: "127.0.0.1:0", HTTPAddr: ln.Addr().String(),
		Bootstrap: bootstrap, InMemory: true,
		RaftTLS: &tls.Config{Certificates: []tls.Certificate{raftCA.issue(t, id)}, RootCAs: raftCA.pool},
		APITLS:  &tls.Config{RootCAs: apiCA.pool},
		Logger:  hclog.New(&hclog.LoggerOptions{Name: "raft-" + id, Level: hclog.Error, Output: io.Discard}),
		Tune:    tcpTiming,
	}, fsm.New())
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	api := httpapi.New(node, httpapi.Config{Logger: quiet})
	fr := front.New(node, api, front.Options{Secret: secret, LeaderWait: 5 * time.Second, Logger: quiet})
	runCtx, stopFront := context.WithCancel(context.Background())
	go fr.Run(runCtx)
	srv := &http.Server{
		Handler:  fr,
		ErrorLog: log.New(io.Discard, "", 0), // the refused handshakes below
	}
	for _, f := range with {
		f(srv)
	}
	go srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{apiCA.issue(t, id)}, MinVersion: tls.VersionTLS12}))
	t.Cleanup(func() {
		stopFront()
		srv.Close()
		node.Shutdown()
	})
	return &tlsNode{ID: id, Node: node, Addr: ln.Addr().String()}
}

func (n *tlsNode) join(t *testing.T, via *tlsNode, timeout time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return front.JoinCluster(ctx, n.Node, []string{via.Addr}, secret, false)
}

// tlsLeader waits until one of nodes leads and the others follow it, and
// returns it and the others.
func tlsLeader(t *testing.T, nodes []*tlsNode) (*tlsNode, []*tlsNode) {
	t.Helper()
	var leader *tlsNode
	var followers []*tlsNode
	waitFor(t, "a leader every node follows", func() bool {
		leader, followers = nil, nil
		for _, n := range nodes {
			if n.Node.IsLeader() {
				leader = n
			} else {
				followers = append(followers, n)
			}
		}
		if leader == nil {
			return false
		}
		for _, f := range followers {
			if id, _ := f.Node.Leader(); id != leader.ID {
				return false
			}
		}
		return true
	})
	return leader, followers
}

// applyOnLeader applies cmd on whichever of nodes leads, again while
// leadership moves (a load-induced election): only ErrNotLeader, which
// says the command was not appended, is retried.
func applyOnLeader(t *testing.T, nodes []*tlsNode, cmd state.Command) {
	t.Helper()
	notLeader := func(err error) bool { return errors.Is(err, cluster.ErrNotLeader) }
	if err := testcluster.Retry(15*time.Second, notLeader, func(ctx context.Context) error {
		leader, _ := tlsLeader(t, nodes)
		_, err := leader.Node.Apply(ctx, cmd)
		return err
	}); err != nil {
		t.Fatalf("the cluster takes no writes: %v", err)
	}
}

// retryLeaderChange runs op (an idempotent membership change) again while
// it answers 503 (leadership moved under load).
func retryLeaderChange(t *testing.T, what string, op func(context.Context) error) {
	t.Helper()
	unavailable := func(err error) bool {
		var se *front.StatusError
		return errors.As(err, &se) && se.Code == http.StatusServiceUnavailable
	}
	if err := testcluster.Retry(15*time.Second, unavailable, op); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func hasClass(n *cluster.Node, name string) bool {
	var ok bool
	n.FSM().Read(func(s *state.Store) { ok = s.Classes.Get(name) != nil })
	return ok
}

func hasTrait(n *cluster.Node, name string) bool {
	var ok bool
	n.FSM().Read(func(s *state.Store) { ok = s.Traits.Get(name) != nil })
	return ok
}

// tlsCluster starts n1 and joins n2 and n3 (n3 through n2, a follower,
// so the join is forwarded over HTTPS), all from the same CAs.
func tlsCluster(t *testing.T, raftCA, apiCA *testCA) []*tlsNode {
	t.Helper()
	n1 := startTLSNode(t, "n1", true, raftCA, apiCA)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n1.Node.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	n2 := startTLSNode(t, "n2", false, raftCA, apiCA)
	if err := n2.join(t, n1, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n2 knows the leader's API address", func() bool { _, addr := n2.Node.Leader(); return addr != "" })
	n3 := startTLSNode(t, "n3", false, raftCA, apiCA)
	if err := n3.join(t, n2, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	return []*tlsNode{n1, n2, n3}
}

// A cluster over mutual TLS forms, replicates, and a follower forwards a
// write to the leader over HTTPS; the operator API works over HTTPS.
func TestTLSClusterFormsAndForwards(t *testing.T) {
	raftCA, apiCA := newCA(t, "raft CA"), newCA(t, "api CA")
	nodes := tlsCluster(t, raftCA, apiCA)
	// n1 bootstrapped the cluster, but on a loaded machine another node
	// may have taken over since: the write goes through a follower of
	// whichever node leads.
	n1 := nodes[0]
	leader, followers := tlsLeader(t, nodes)

	// A write through a follower: forwarded to the leader over HTTPS.
	follower := followers[len(followers)-1]
	req, _ := http.NewRequest(http.MethodPost, "https://"+follower.Addr+"/resource_classes",
		strings.NewReader(`{"name": "CUSTOM_OVER_TLS"}`))
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Authorization", "Bearer "+secret) // to see X-Placementd-Served-By
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	req.Header.Set("Content-Type", "application/json")
	resp, err := apiCA.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("write through a follower: %d %s", resp.StatusCode, body)
	}
	if by := resp.Header.Get(front.ServedByHeader); by != leader.ID {
		t.Fatalf("served by %q, want the leader %s", by, leader.ID)
	}
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "https://") {
		t.Errorf("Location %q: the leader should see an HTTPS request", loc)
	}
	for _, n := range nodes {
		waitFor(t, n.ID+" has the class", func() bool { return hasClass(n.Node, "CUSTOM_OVER_TLS") })
	}

	// Plain HTTP finds no API.
	if resp, err := http.Get("http://" + follower.Addr + "/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to an HTTPS API: %d", resp.StatusCode)
		}
	}

	// The status gathers every member's report over HTTPS.
	c := &front.Client{Addr: nodes[1].Addr, Secret: secret, TLS: &tls.Config{RootCAs: apiCA.pool}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var st front.ClusterStatus
	waitFor(t, "every member healthy", func() bool {
		st, err = c.Status(ctx)
		if err != nil || len(st.Members) != 3 {
			return false
		}
		for _, m := range st.Members {
			if !m.Healthy {
				return false
			}
		}
		return true
	})
	// Without the CA, the client refuses the API's certificate.
	if _, err := (&front.Client{Addr: "https://" + n1.Addr, Secret: secret}).Status(ctx); err == nil {
		t.Error("a client without the CA accepted the API certificate")
	}
}

// dialStream is a raft StreamLayer that dials as dial says: an intruder's.
type dialStream struct {
	net.Listener
	dial func(addr string, timeout time.Duration) (net.Conn, error)
}

func (s dialStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.dial(string(addr), timeout)
}

// tlsIntruder is a raft transport that speaks TLS with cert, trusting
// any server.
func tlsIntruder(t *testing.T, cert tls.Certificate) raft.Transport {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{
		InsecureSkipVerify: true,
		// Present the certificate even though the server's CA list does
		// not name its issuer (Go would otherwise send none).
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
	}
	trans := raft.NewNetworkTransport(dialStream{Listener: ln, dial: func(addr string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", addr, cfg)
	}}, 1, 5*time.Second, io.Discard)
	t.Cleanup(func() { trans.Close() })
	return trans
}

// inject sends target an AppendEntries of a new term carrying a placement
// command, as a rogue leader would, and returns the transport's error.
func inject(t *testing.T, trans raft.Transport, target *tlsNode) (raft.AppendEntriesResponse, error) {
	t.Helper()
	lastIndex := target.Node.Raft().LastIndex()
	lastTerm, _ := strconv.ParseUint(target.Node.Raft().Stats()["last_log_term"], 10, 64)
	term := target.Node.Raft().CurrentTerm() + 1
	data, err := fsm.Encode(&state.CreateTrait{Name: "CUSTOM_INJECTED"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req := &raft.AppendEntriesRequest{
		RPCHeader:    raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte(trans.LocalAddr())},
		Term:         term,
		PrevLogEntry: lastIndex, PrevLogTerm: lastTerm,
		Entries:           []*raft.Log{{Index: lastIndex + 1, Term: term, Type: raft.LogCommand, Data: data}},
		LeaderCommitIndex: lastIndex + 1,
	}
	var resp raft.AppendEntriesResponse
	err = trans.AppendEntries(raft.ServerID(target.ID), raft.ServerAddress(target.Node.RaftAddr()), req, &resp)
	return resp, err
}

// Only a certificate of the cluster's CA gets a node into the Raft
// traffic: a node with another CA's certificates cannot join, one that
// gets itself added through the API never receives the log, and a rogue
// connection with a wrong certificate, or none, or without TLS, is cut
// off in the handshake and changes nothing.
func TestTLSRejectsForeignNodes(t *testing.T) {
	raftCA, apiCA, otherCA := newCA(t, "raft CA"), newCA(t, "api CA"), newCA(t, "other CA")
	nodes := tlsCluster(t, raftCA, apiCA)
	n1 := nodes[0]
	_, followers := tlsLeader(t, nodes)
	n2 := followers[0] // the follower the rogue connections below go to
	applyOnLeader(t, nodes, &state.CreateResourceClass{Name: "CUSTOM_BEFORE"})

	// A node made entirely by another CA does not trust the cluster's API
	// certificate: its join fails.
	// (The join retries until its deadline, so its error may be the
	// deadline's when an attempt was under way on a loaded machine: the
	// reason is checked with one request of the stranger's trust.)
	stranger := startTLSNode(t, "stranger", false, otherCA, otherCA)
	if err := stranger.join(t, n1, 3*time.Second); err == nil {
		t.Fatal("a node of another CA joined")
	}
	strangerView := &front.Client{Addr: n1.Addr, Secret: secret, TLS: &tls.Config{RootCAs: otherCA.pool}}
	if _, err := strangerView.Status(context.Background()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client trusting another CA reached the cluster's API: %v", err)
	}

	// One that knows the secret and the API's CA is added to the
	// configuration, but the leader cannot hand it a single entry: its
	// Raft certificate is not the cluster CA's.
	rogue := startTLSNode(t, "rogue", false, otherCA, apiCA)
	if err := rogue.join(t, n1, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	applyOnLeader(t, nodes, &state.CreateResourceClass{Name: "CUSTOM_AFTER"})
	waitFor(t, n2.ID+" has the write", func() bool { return hasClass(n2.Node, "CUSTOM_AFTER") })
	// About time: an absence (no entry ever reaches the rogue node) can
	// only be watched for a while; 2 s is many heartbeats and retries.
	time.Sleep(2 * time.Second)
	if idx := rogue.Node.Raft().LastIndex(); idx != 0 || hasClass(rogue.Node, "CUSTOM_BEFORE") {
		t.Fatalf("the rogue node received the log (last index %d)", idx)
	}
	if id, _ := rogue.Node.Leader(); id != "" {
		t.Fatalf("the rogue node heard from leader %q", id)
	}
	admin := &front.Client{Addr: n1.Addr, Secret: secret, TLS: &tls.Config{RootCAs: apiCA.pool}}
	retryLeaderChange(t, "remove rogue", func(ctx context.Context) error { return admin.Remove(ctx, "rogue") })

	// An impostor at a member's Raft address, with another CA's
	// certificate and taking any client: the leader dials it but never
	// completes a handshake, so it neither reads the log nor acks it.
	imp := impostor(t, otherCA.issue(t, "impostor"))
	retryLeaderChange(t, "add the impostor", func(ctx context.Context) error {
		return admin.Join(ctx, cluster.JoinRequest{ID: "impostor", RaftAddr: imp.addr, NonVoter: true, Reads: fsm.BuildFormats})
	})
	// Each dial is a handshake the leader tried: after several, none
	// may have completed.
	waitFor(t, "the leader dials the impostor again and again", func() bool { return imp.dials.Load() >= 3 })
	if n := imp.handshakes.Load(); n != 0 {
		t.Fatalf("the leader completed %d handshakes with an impostor", n)
	}
	retryLeaderChange(t, "remove the impostor", func(ctx context.Context) error { return admin.Remove(ctx, "impostor") })

	// Rogue Raft connections to a follower, which would accept an
	// AppendEntries of a higher term from anyone who gets through.
	wantDigest := digestOf(n2.Node)
	for _, tc := range []struct {
		name  string
		trans raft.Transport
	}{
		{"another CA's certificate", tlsIntruder(t, otherCA.issue(t, "intruder"))},
		{"plain TCP", plainTransport(t)},
	} {
		if resp, err := inject(t, tc.trans, n2); err == nil {
			t.Errorf("%s: AppendEntries went through (success %v)", tc.name, resp.Success)
		}
	}

	// The handshake itself fails: the server refuses the certificate, or
	// the lack of one.
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
	}{
		{"another CA's certificate", ptr(otherCA.issue(t, "intruder"))},
		{"no certificate", nil},
	} {
		err := handshake(n2.Node.RaftAddr(), tc.cert)
		if err == nil || !strings.Contains(err.Error(), "remote error: tls") {
			t.Errorf("%s: handshake: %v, want the server's TLS alert", tc.name, err)
		}
	}
	// A plain TCP connection is closed without an answer.
	conn, err := net.DialTimeout("tcp", n2.Node.RaftAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	conn.Write(bytes.Repeat([]byte{0}, 64)) // raft's rpcAppendEntries type byte, and more
	if n, err := conn.Read(make([]byte, 64)); err == nil || isTimeout(err) {
		t.Errorf("plain TCP: read %d bytes, %v; want the connection closed", n, err)
	}
	conn.Close()

	// An AppendEntries that got through would make its sender n2's
	// leader (the term alone may move by a real election under load).
	if id, _ := n2.Node.Leader(); id == "intruder" {
		t.Errorf("%s follows the intruder", n2.ID)
	}
	for _, n := range nodes {
		if hasTrait(n.Node, "CUSTOM_INJECTED") {
			t.Errorf("%s applied the injected entry", n.ID)
		}
	}
	if d := digestOf(n2.Node); d != wantDigest {
		t.Errorf("state changed: %s, was %s", d, wantDigest)
	}
	applyOnLeader(t, nodes, &state.CreateResourceClass{Name: "CUSTOM_STILL_WRITABLE"})

	// Control: the same injection with a certificate of the cluster's CA
	// reaches a node (a fresh one, not to disturb the cluster) and is
	// applied. The CA's signature is all that makes a member.
	fresh := startTLSNode(t, "fresh", false, raftCA, apiCA)
	resp, err := inject(t, tlsIntruder(t, raftCA.issue(t, "insider")), fresh)
	if err != nil || !resp.Success {
		t.Fatalf("control injection: success %v, %v", resp.Success, err)
	}
	waitFor(t, "the control injection applied", func() bool { return hasTrait(fresh.Node, "CUSTOM_INJECTED") })
}

type impostorListener struct {
	addr              string
	dials, handshakes atomic.Int64
}

// impostor listens for Raft connections with cert, requesting but not
// checking client certificates, and counts the handshakes that complete.
func impostor(t *testing.T, cert tls.Certificate) *impostorListener {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	imp := &impostorListener{addr: ln.Addr().String()}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			imp.dials.Add(1)
			go func() {
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(5 * time.Second))
				if conn.(*tls.Conn).Handshake() == nil {
					imp.handshakes.Add(1)
				}
			}()
		}
	}()
	return imp
}

func plainTransport(t *testing.T) raft.Transport {
	t.Helper()
	trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { trans.Close() })
	return trans
}

// handshake connects to a Raft port with cert (nil: none) and reads: in
// TLS 1.3 the client finishes its side before the server has checked the
// client certificate, so the refusal arrives as an alert on the first read.
func handshake(addr string, cert *tls.Certificate) error {
	cfg := &tls.Config{InsecureSkipVerify: true}
	if cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	return err
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func digestOf(n *cluster.Node) string {
	d, _ := n.Digest()
	return d
}

func ptr[T any](v T) *T { return &v }
