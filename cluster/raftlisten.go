package cluster

import (
	"crypto/tls"
	"errors"
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

// raftConnLimits bounds inbound Raft connections.
type raftConnLimits struct {
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
}

var defaultRaftConnLimits = raftConnLimits{
	Handshake:    10 * time.Second,
	FirstMessage: 10 * time.Second,
	MaxPending:   256,
	MaxOpen:      256,
}

type raftListener struct {
	inner  net.Listener
	tls    *tls.Config // the accepting side; nil: plain TCP
	limits raftConnLimits
	logger hclog.Logger

	pending, open chan struct{} // semaphores
	ready         chan net.Conn
	closed        chan struct{}
	closeOnce     sync.Once
}

func newRaftListener(inner net.Listener, server *tls.Config, limits raftConnLimits, logger hclog.Logger) *raftListener {
	l := &raftListener{
		inner: inner, tls: server, limits: limits, logger: logger,
		pending: make(chan struct{}, limits.MaxPending),
		open:    make(chan struct{}, limits.MaxOpen),
		ready:   make(chan net.Conn),
		closed:  make(chan struct{}),
	}
	go l.acceptLoop()
	return l
}

func (l *raftListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *raftListener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.closed)
		err = l.inner.Close()
	})
	return err
}

func (l *raftListener) Addr() net.Addr { return l.inner.Addr() }

func (l *raftListener) acceptLoop() {
	var delay time.Duration
	for {
		c, err := l.inner.Accept()
		if err != nil {
			select {
			case <-l.closed:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off as net/http
			// does, rather than spin.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			l.logger.Warn("raft: accepting a connection", "error", err)
			select {
			case <-time.After(delay):
			case <-l.closed:
				return
			}
			continue
		}
		delay = 0
		select {
		case l.pending <- struct{}{}:
			go l.admit(c)
		default:
			l.logger.Warn("raft: too many inbound connections in handshake, closing one", "remote", c.RemoteAddr().String(), "max", l.limits.MaxPending)
			c.Close()
		}
	}
}

// admit hands c to raft once it has completed the TLS handshake (when
// there is TLS) and sent its first byte, or closes it.
func (l *raftListener) admit(raw net.Conn) {
	defer func() { <-l.pending }()
	var c net.Conn = raw
	if l.tls != nil {
		tc := tls.Server(raw, l.tls)
		raw.SetDeadline(time.Now().Add(l.limits.Handshake))
		if err := tc.Handshake(); err != nil {
			l.logger.Warn("raft: refused an inbound connection", "remote", raw.RemoteAddr().String(), "error", err)
			raw.Close()
			return
		}
		c = tc
	}
	raw.SetDeadline(time.Now().Add(l.limits.FirstMessage))
	var first [1]byte
	if _, err := c.Read(first[:]); err != nil {
		l.logger.Debug("raft: inbound connection sent nothing", "remote", raw.RemoteAddr().String(), "error", err)
		c.Close()
		return
	}
	raw.SetDeadline(time.Time{})
	select {
	case l.open <- struct{}{}:
	default:
		l.logger.Warn("raft: too many open inbound connections, closing one", "remote", raw.RemoteAddr().String(), "max", l.limits.MaxOpen)
		c.Close()
		return
	}
	ac := &admittedConn{Conn: c, first: first[:], release: func() { <-l.open }}
	select {
	case l.ready <- ac:
	case <-l.closed:
		ac.Close()
	}
}

// admittedConn is a connection raft holds: its first byte, already read,
// comes first, and closing it frees its place under MaxOpen.
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
