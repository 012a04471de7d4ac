package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
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

// RaftConnLimits bounds inbound Raft connections (Config.RaftConns).
type RaftConnLimits struct {
	// Handshake bounds the TLS handshake of an inbound connection.
	Handshake time.Duration
	// FirstMessage bounds the wait for the first byte of the first RPC
	// after the handshake: raft's dialer sends an RPC as soon as it has
	// connected, so a silent connection is not a peer.
	FirstMessage time.Duration
	// MaxPending bounds the connections in handshake or waiting for their
	// first byte; past it new ones are closed at once.
	MaxPending int
	// MaxOpen bounds the connections handed to raft (each holds its
	// buffer); past it new ones are closed. A peer keeps a few (a pool of
	// MaxPool plus the replication pipeline), so this leaves room for
	// dozens of peers.
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

	pending, open chan struct{} // semaphores
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
		pending: make(chan struct{}, limits.MaxPending),
		open:    make(chan struct{}, limits.MaxOpen),
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
		select {
		case l.pending <- struct{}{}:
			go l.admit(c, src)
		default:
			l.releaseSource(src)
			l.refuse(c, "too many connections in handshake", nil)
		}
	}
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
// handshake (when there is TLS) and sent its first byte, or closes it.
func (l *raftListener) admit(raw net.Conn, src string) {
	defer func() { <-l.pending }()
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
	select {
	case l.open <- struct{}{}:
	default:
		l.refuse(c, "too many open connections", nil)
		return
	}
	ac := &admittedConn{Conn: c, first: first[:], release: func() { <-l.open; l.releaseSource(src) }}
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
