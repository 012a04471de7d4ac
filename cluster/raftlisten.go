package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// raft's NetworkTransport gives every connection Accept returns a
// goroutine and a 256 KiB read buffer, and never sets a read deadline on
// it. raftListener stands between the TCP listener and raft so that a
// connection reaches raft only once it has proved something: the TLS
// handshake done and the peer's certificate verified (with Raft TLS), and
// the first byte of an RPC arrived, each within a deadline. Until then a
// connection costs a small goroutine and no raft buffer, and there is a
// bound on how many may be in that state, and on how many raft holds.
// Half of each bound is kept for the addresses of the Raft configuration's
// members (setMembers): a flood of connections from elsewhere fills the
// other half and no more, and a member finding the handshake places full
// evicts a stranger's, so members reconnect (after a restart, or to elect
// a new leader) whatever strangers do.

// RaftConnLimits bounds inbound Raft connections (Config.RaftConns).
type RaftConnLimits struct {
	// Handshake bounds the TLS handshake of an inbound connection.
	Handshake time.Duration
	// FirstMessage bounds the wait for the first byte of the first RPC
	// after the handshake: raft's dialer sends an RPC as soon as it has
	// connected, so a silent connection is not a peer.
	FirstMessage time.Duration
	// MaxPending bounds the connections in handshake or waiting for their
	// first byte; past it new ones are closed at once. Once the members'
	// addresses are known, connections from other addresses may take
	// only half of it (rounded up).
	MaxPending int
	// MaxOpen bounds the connections handed to raft (each holds its
	// buffer); past it new ones are closed. A peer keeps a few (a pool of
	// MaxPool plus the replication pipeline), so this leaves room for
	// dozens of peers. Half is kept for members as MaxPending's.
	MaxOpen int
	// MaxPerSource bounds the connections from one source IP address,
	// pending and held alike (0: no bound); past it new ones from that
	// address are closed at once, so that one source cannot take every
	// place of MaxPending or MaxOpen. Members that share an address
	// (one host, a NAT) share the bound.
	MaxPerSource int
}

// DefaultRaftConnLimits are the limits of a node whose Config.RaftConns
// is nil.
var DefaultRaftConnLimits = RaftConnLimits{
	Handshake:    10 * time.Second,
	FirstMessage: 10 * time.Second,
	MaxPending:   256,
	MaxOpen:      256,
	MaxPerSource: 32,
}

// Check reports a limit that cannot work.
func (l RaftConnLimits) Check() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"handshake timeout", l.Handshake}, {"first message timeout", l.FirstMessage}} {
		if d.v <= 0 {
			return fmt.Errorf("raft %s %s: want a positive duration", d.name, d.v)
		}
	}
	for _, n := range []struct {
		name   string
		v, min int
	}{{"pending connections", l.MaxPending, 1}, {"connections", l.MaxOpen, 1}, {"connections per source address", l.MaxPerSource, 0}} {
		if n.v < n.min {
			return fmt.Errorf("raft max %s %d: want %d or more", n.name, n.v, n.min)
		}
	}
	return nil
}

type raftListener struct {
	inner  net.Listener
	tls    *tls.Config // the accepting side; nil: plain TCP
	limits RaftConnLimits
	logger hclog.Logger

	pending, open *places
	// members holds the IP addresses of the Raft configuration's servers
	// (setMembers); nil or empty until known.
	members atomic.Pointer[map[string]bool]
	// sources counts the connections open from each source address
	// (MaxPerSource), from accept until closed.
	sourcesMu sync.Mutex
	sources   map[string]int
	ready     chan net.Conn
	// ctx ends with Close, and with it the connections still being
	// admitted.
	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once

	// Refusals are logged at most once per refusalLogEvery, with the
	// count since, so that a flood does not flood the log too.
	logMu     sync.Mutex
	refused   int
	lastWarn  time.Time
	lastError string
}

const refusalLogEvery = 10 * time.Second

func newRaftListener(inner net.Listener, server *tls.Config, limits RaftConnLimits, logger hclog.Logger) *raftListener {
	l := &raftListener{
		inner: inner, tls: server, limits: limits, logger: logger,
		pending: &places{max: limits.MaxPending},
		open:    &places{max: limits.MaxOpen},
		sources: map[string]int{},
		ready:   make(chan net.Conn),
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	go l.acceptLoop()
	return l
}

func (l *raftListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.ctx.Done():
		return nil, net.ErrClosed
	}
}

func (l *raftListener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.cancel()
		err = l.inner.Close()
	})
	return err
}

// refuse closes c and counts it, logging why now and then.
func (l *raftListener) refuse(c net.Conn, why string, err error) {
	c.Close()
	if l.ctx.Err() != nil {
		return // closing: not a refusal
	}
	l.logMu.Lock()
	defer l.logMu.Unlock()
	l.refused++
	l.lastError = why
	if err != nil {
		l.lastError += ": " + err.Error()
	}
	if now := time.Now(); now.Sub(l.lastWarn) >= refusalLogEvery {
		l.logger.Warn("raft: refused inbound connections", "count", l.refused, "last", l.lastError, "remote", c.RemoteAddr().String())
		l.refused, l.lastWarn = 0, now
	}
}

func (l *raftListener) Addr() net.Addr { return l.inner.Addr() }

func (l *raftListener) acceptLoop() {
	var delay time.Duration
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if l.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off as net/http
			// does, rather than spin.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			l.logger.Warn("raft: accepting a connection", "error", err)
			select {
			case <-time.After(delay):
			case <-l.ctx.Done():
				return
			}
			continue
		}
		delay = 0
		src := sourceOf(c)
		if !l.takeSource(src) {
			l.refuse(c, "too many connections from one address", nil)
			continue
		}
		member, known := l.isMember(src)
		pl := l.pending.take(member, known, func() { c.Close() })
		if pl == nil {
			l.releaseSource(src)
			l.refuse(c, "too many connections in handshake", nil)
			continue
		}
		go l.admit(c, src, pl)
	}
}

// setMembers gives the IP addresses of the Raft configuration's servers.
func (l *raftListener) setMembers(ips []string) {
	m := make(map[string]bool, len(ips))
	for _, ip := range ips {
		if p := net.ParseIP(ip); p != nil {
			m[p.String()] = true // the form sourceOf gives
		}
	}
	l.members.Store(&m)
}

// isMember says whether src is a member's address, and whether members
// are known at all (until then nothing is kept for them).
func (l *raftListener) isMember(src string) (member, known bool) {
	m := l.members.Load()
	if m == nil || len(*m) == 0 {
		return false, false
	}
	return (*m)[src], true
}

// places counts connections in one state (in handshake, or held by raft)
// under a bound, half of which only members may take once they are
// known. A member that finds no place takes one of a stranger's that can
// be evicted (a connection in handshake), whose connection is closed: a
// flood that came before the members were known (a node that has just
// joined learns them from the leader) gives way as they come.
type places struct {
	mu   sync.Mutex
	max  int
	used int
	// strangers holds the places taken by others than members, each
	// with the function evicting its connection (nil: not evictable).
	strangers map[*place]func()
}

// place is one connection's place.
type place struct{ member bool }

// take counts a connection, or says there is no place for it (nil).
func (p *places) take(member, known bool, evict func()) *place {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.strangers == nil {
		p.strangers = map[*place]func(){}
	}
	pl := &place{member: member}
	switch {
	case p.used < p.max && (member || !known || len(p.strangers) < p.max-p.max/2):
	case member && p.evictStranger():
	default:
		return nil
	}
	p.used++
	if !member {
		p.strangers[pl] = evict
	}
	return pl
}

// evictStranger closes the connection of a stranger's evictable place
// and forgets it as a stranger's; the place is counted until that
// connection gives it back, so the bound may be passed by the evictions
// under way.
func (p *places) evictStranger() bool {
	for pl, evict := range p.strangers {
		if evict != nil {
			delete(p.strangers, pl)
			evict()
			return true
		}
	}
	return false
}

// give frees a place take counted.
func (p *places) give(pl *place) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.used--
	delete(p.strangers, pl)
}

// inUse is the number of places taken.
func (p *places) inUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// sourceOf is the IP address a connection comes from.
func sourceOf(c net.Conn) string {
	addr := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// takeSource counts a connection from src, unless src has MaxPerSource.
func (l *raftListener) takeSource(src string) bool {
	if l.limits.MaxPerSource <= 0 {
		return true
	}
	l.sourcesMu.Lock()
	defer l.sourcesMu.Unlock()
	if l.sources[src] >= l.limits.MaxPerSource {
		return false
	}
	l.sources[src]++
	return true
}

// releaseSource forgets a connection from src that takeSource counted.
func (l *raftListener) releaseSource(src string) {
	if l.limits.MaxPerSource <= 0 {
		return
	}
	l.sourcesMu.Lock()
	defer l.sourcesMu.Unlock()
	if l.sources[src]--; l.sources[src] <= 0 {
		delete(l.sources, src)
	}
}

// admit hands c, from src, to raft once it has completed the TLS
// handshake (when there is TLS) and sent its first byte, or closes it;
// pending is its place in handshake.
func (l *raftListener) admit(raw net.Conn, src string, pending *place) {
	defer l.pending.give(pending)
	// Until raft has it, the connection's count of src is given back
	// here; then by closing it.
	handed := false
	defer func() {
		if !handed {
			l.releaseSource(src)
		}
	}()
	stop := context.AfterFunc(l.ctx, func() { raw.Close() })
	defer stop()
	var c net.Conn = raw
	if l.tls != nil {
		tc := tls.Server(raw, l.tls)
		raw.SetDeadline(time.Now().Add(l.limits.Handshake))
		if err := tc.Handshake(); err != nil {
			l.refuse(raw, "TLS handshake", err)
			return
		}
		c = tc
	}
	raw.SetDeadline(time.Now().Add(l.limits.FirstMessage))
	var first [1]byte
	if _, err := c.Read(first[:]); err != nil {
		l.refuse(c, "no first message", err)
		return
	}
	raw.SetDeadline(time.Time{})
	// Raft's connections are not evicted: a member whose address is not
	// in the configuration (behind a proxy or NAT) holds them too.
	member, known := l.isMember(src)
	held := l.open.take(member, known, nil)
	if held == nil {
		l.refuse(c, "too many open connections", nil)
		return
	}
	ac := &admittedConn{Conn: c, first: first[:], release: func() { l.open.give(held); l.releaseSource(src) }}
	handed = true
	select {
	case l.ready <- ac:
	case <-l.ctx.Done():
		ac.Close()
	}
}

// admittedConn is a connection raft holds: its first byte, already read,
// comes first, and closing it frees its place under MaxOpen and
// MaxPerSource.
type admittedConn struct {
	net.Conn
	mu      sync.Mutex
	first   []byte
	once    sync.Once
	release func()
}

func (c *admittedConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	if len(c.first) > 0 && len(p) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	return c.Conn.Read(p)
}

func (c *admittedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// tellRaftListenerMembers gives the Raft listener the IP addresses of the
// servers in the Raft configuration every memberAddrsEvery, names
// resolved, so that it keeps places for them.
func (n *Node) tellRaftListenerMembers() {
	defer n.done.Done()
	tick := time.NewTicker(memberAddrsEvery)
	defer tick.Stop()
	for {
		if fut := n.raft.GetConfiguration(); fut.Error() == nil {
			var ips []string
			for _, s := range fut.Configuration().Servers {
				host, _, err := net.SplitHostPort(string(s.Address))
				if err != nil {
					continue
				}
				if net.ParseIP(host) != nil {
					ips = append(ips, host)
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), memberAddrsEvery)
				addrs, _ := net.DefaultResolver.LookupHost(ctx, host)
				cancel()
				ips = append(ips, addrs...)
			}
			n.raftLn.setMembers(ips)
		}
		select {
		case <-n.stop:
			return
		case <-tick.C:
		}
	}
}

// memberAddrsEvery is how often the Raft listener learns the members'
// addresses: a new member's first connections may come as a stranger's
// for that long.
const memberAddrsEvery = time.Second
