package faults

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// Network partitions are made by a proxy in front of each node's Raft
// port: every node advertises its proxy's address as its Raft address, so
// all Raft traffic between nodes passes through the proxies, which can cut
// any link. On loopback every connection comes from 127.0.0.1 whatever the
// node, so the proxy learns who dials from the first RPC on the
// connection: each carries the sender's id in its header (raft's
// RPCHeader), and raft keeps a connection to one peer only.
//
// The API (HTTP) traffic between nodes, followers forwarding requests to
// the leader, is not cut: a partition here separates the Raft group, as a
// partition of a dedicated replication network would. Clients still reach
// every node.

// network is the set of proxies of a cluster and the links that are cut.
type network struct {
	mu      sync.Mutex
	cut     map[[2]string]bool // {from, to} cut, both directions are cut separately
	proxies map[string]*proxy
	// delay and jitter: every byte crossing a proxy, either way, arrives
	// delay ± jitter after it was sent (0: at once).
	delay, jitter time.Duration
	rng           *rand.Rand
}

func newNetwork() *network {
	return &network{cut: map[[2]string]bool{}, proxies: map[string]*proxy{}, rng: rand.New(rand.NewSource(1))}
}

// setDelay makes every link delay what crosses it by delay ± jitter each
// way, from now on.
func (nw *network) setDelay(delay, jitter time.Duration) {
	nw.mu.Lock()
	nw.delay, nw.jitter = delay, jitter
	nw.mu.Unlock()
}

// oneWay is the delay of a chunk sent now.
func (nw *network) oneWay() time.Duration {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	d := nw.delay
	if nw.jitter > 0 {
		d += time.Duration(nw.rng.Int63n(int64(2*nw.jitter))) - nw.jitter
	}
	return max(d, 0)
}

// copyDelayed copies src to dst, each chunk delivered oneWay() after it
// was read and never before the chunk read before it.
func (nw *network) copyDelayed(dst io.Writer, src io.Reader) {
	type chunk struct {
		b   []byte
		due time.Time
	}
	chunks := make(chan chunk, 1024)
	go func() {
		defer close(chunks)
		var last time.Time
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				due := time.Now().Add(nw.oneWay())
				if due.Before(last) {
					due = last
				}
				last = due
				chunks <- chunk{buf[:n], due}
			}
			if err != nil {
				return
			}
		}
	}()
	failed := false
	for c := range chunks {
		if failed {
			continue // drain, so that the reader is never stuck
		}
		// Holding the chunk until it is due is what this link does.
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.b); err != nil {
			failed = true
		}
	}
}

// proxy forwards connections to one node's Raft port.
type proxy struct {
	net    *network
	to     string // node id behind the proxy
	target string // the node's real Raft address
	ln     net.Listener

	mu    sync.Mutex
	conns map[*proxyConn]bool
}

type proxyConn struct {
	from         string
	client, node net.Conn
}

// listen starts the proxy in front of node id, whose Raft port is target.
func (nw *network) listen(addr, id, target string) (*proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &proxy{net: nw, to: id, target: target, ln: ln, conns: map[*proxyConn]bool{}}
	nw.mu.Lock()
	nw.proxies[id] = p
	nw.mu.Unlock()
	go p.serve()
	return p, nil
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

// blocked reports whether traffic from -> to is cut.
func (nw *network) blocked(from, to string) bool {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.cut[[2]string{from, to}]
}

func (p *proxy) handle(client net.Conn) {
	// Read the first RPC to learn the sender, keeping every byte read so
	// that it can be passed on unchanged.
	var seen bytes.Buffer
	client.SetReadDeadline(time.Now().Add(30 * time.Second))
	from, err := sender(bufio.NewReader(io.TeeReader(client, &seen)))
	client.SetReadDeadline(time.Time{})
	if err != nil {
		client.Close()
		return
	}
	if p.net.blocked(from, p.to) {
		// The packets of a cut link are lost: hold the connection without
		// answering until the dialer gives up or the link heals.
		p.blackhole(client, from)
		return
	}
	node, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		client.Close()
		return
	}
	pc := &proxyConn{from: from, client: client, node: node}
	p.mu.Lock()
	p.conns[pc] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, pc)
		p.mu.Unlock()
		client.Close()
		node.Close()
	}()
	if _, err := node.Write(seen.Bytes()); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { p.net.copyDelayed(node, client); done <- struct{}{} }()
	go func() { p.net.copyDelayed(client, node); done <- struct{}{} }()
	<-done
}

// blackhole swallows what arrives on a connection of a cut link, and
// closes it when the link heals (the dialer then reconnects).
func (p *proxy) blackhole(client net.Conn, from string) {
	go io.Copy(io.Discard, client)
	for p.net.blocked(from, p.to) {
		time.Sleep(100 * time.Millisecond)
	}
	client.Close()
}

// sever closes the established connections of links now cut.
func (p *proxy) sever() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pc := range p.conns {
		if p.net.blocked(pc.from, p.to) {
			pc.client.Close()
			pc.node.Close()
		}
	}
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for pc := range p.conns {
		pc.client.Close()
		pc.node.Close()
	}
	p.mu.Unlock()
}

// sender decodes the first RPC of a connection (as raft's transport
// does) and returns the id of the node that sent it.
func sender(r *bufio.Reader) (string, error) {
	rpcType, err := r.ReadByte()
	if err != nil {
		return "", err
	}
	var req raft.WithRPCHeader
	switch rpcType {
	case 0:
		req = &raft.AppendEntriesRequest{}
	case 1:
		req = &raft.RequestVoteRequest{}
	case 2:
		req = &raft.InstallSnapshotRequest{}
	case 3:
		req = &raft.TimeoutNowRequest{}
	case 4:
		req = &raft.RequestPreVoteRequest{}
	default:
		return "", fmt.Errorf("unknown raft rpc type %d", rpcType)
	}
	if err := codec.NewDecoder(r, &codec.MsgpackHandle{}).Decode(req); err != nil {
		return "", err
	}
	id := string(req.GetRPCHeader().ID)
	if id == "" {
		return "", fmt.Errorf("raft rpc without a sender id")
	}
	return id, nil
}

// setCut replaces the set of cut links and severs what is now cut.
func (nw *network) setCut(cut map[[2]string]bool) {
	nw.mu.Lock()
	nw.cut = cut
	proxies := make([]*proxy, 0, len(nw.proxies))
	for _, p := range nw.proxies {
		proxies = append(proxies, p)
	}
	nw.mu.Unlock()
	for _, p := range proxies {
		p.sever()
	}
}

// partition cuts every link between nodes of different sides; nodes in
// no side keep every link (a bridge).
func (nw *network) partition(sides ...[]string) {
	side := map[string]int{}
	for i, s := range sides {
		for _, id := range s {
			side[id] = i + 1
		}
	}
	cut := map[[2]string]bool{}
	for a, sa := range side {
		for b, sb := range side {
			if sa != sb {
				cut[[2]string{a, b}] = true
			}
		}
	}
	nw.setCut(cut)
}

func (nw *network) heal() { nw.setCut(map[[2]string]bool{}) }

func (nw *network) close() {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for _, p := range nw.proxies {
		p.close()
	}
}

// DelayProxy forwards every TCP connection it accepts to a target,
// delaying what crosses it by a fixed time each way and counting the
// bytes; benchmarks put one in front of a node's API to stand for a WAN
// link between nodes (any protocol: it does not look at the traffic).
type DelayProxy struct {
	net    *network
	ln     net.Listener
	target string
	bytes  atomic.Int64
}

// NewDelayProxy listens on addr (host:port, port 0 for any) and forwards
// to target with oneWay of delay each way.
func NewDelayProxy(addr, target string, oneWay time.Duration) (*DelayProxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &DelayProxy{net: newNetwork(), ln: ln, target: target}
	p.net.setDelay(oneWay, 0)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.handle(c)
		}
	}()
	return p, nil
}

// Addr is the address the proxy listens on.
func (p *DelayProxy) Addr() string { return p.ln.Addr().String() }

// Bytes is how many bytes crossed the proxy, both ways.
func (p *DelayProxy) Bytes() int64 { return p.bytes.Load() }

// Close stops accepting connections (open ones end with their peers).
func (p *DelayProxy) Close() error { return p.ln.Close() }

func (p *DelayProxy) handle(client net.Conn) {
	defer client.Close()
	node, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		return
	}
	defer node.Close()
	done := make(chan struct{}, 2)
	go func() { p.net.copyDelayed(countingWriter{node, &p.bytes}, client); done <- struct{}{} }()
	go func() { p.net.copyDelayed(countingWriter{client, &p.bytes}, node); done <- struct{}{} }()
	<-done
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}
