package httpguard

import (
	"io"
	"net"
	"sync"
	"time"
)

// Reasons a connection is refused, given to the listener's onRefuse.
const (
	RefusedNodeLimit = "node_limit"
	RefusedIPLimit   = "ip_limit"
)

// Listener caps the connections open at once through it, in all and per
// client IP. A connection past a cap is answered with the refusal bytes
// (when given: a complete HTTP response) and closed at once, before any
// goroutine or buffer is spent on it; the caller's onRefuse counts it.
// A connection counts until it is closed.
type Listener struct {
	net.Listener
	max, perIP int
	refusal    []byte
	onRefuse   func(reason string)
	// lingering holds a place per refused connection being drained
	// before it is closed (closeAfterReading).
	lingering chan struct{}

	mu        sync.Mutex
	open      int
	perIPOpen map[string]int
}

// Listen wraps ln with l's caps (MaxConns, MaxConnsPerIP; 0 is no cap).
// refusal is written to a refused connection (nil: closed without a
// word; give nil when ln is a TLS listener's inner listener). onRefuse
// may be nil.
func Listen(ln net.Listener, l Limits, refusal []byte, onRefuse func(reason string)) *Listener {
	return &Listener{Listener: ln, max: l.MaxConns, perIP: l.MaxConnsPerIP, refusal: refusal,
		onRefuse: onRefuse, perIPOpen: map[string]int{}, lingering: make(chan struct{}, maxLingering)}
}

// Open is the number of connections open through the listener.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Accept returns the next connection within the caps, refusing the others.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		if reason := l.admit(ip); reason != "" {
			l.refuse(c, reason)
			continue
		}
		return &conn{Conn: c, l: l, ip: ip}, nil
	}
}

// admit counts a new connection from ip, or says which cap it passes.
func (l *Listener) admit(ip string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.open >= l.max {
		return RefusedNodeLimit
	}
	if l.perIP > 0 && l.perIPOpen[ip] >= l.perIP {
		return RefusedIPLimit
	}
	l.open++
	l.perIPOpen[ip]++
	return ""
}

func (l *Listener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.perIPOpen[ip]--; l.perIPOpen[ip] <= 0 {
		delete(l.perIPOpen, ip)
	}
}

// refuse answers and closes c. Answering at once, and closing with the
// client's request unread, would lose the answer: an HTTP client takes an
// answer before its request for garbage, and closing a socket with
// unread data resets it, which can destroy the answer before the client
// reads it. So a goroutine waits for the request's first bytes, answers,
// ends its side, reads what the client still sends for a moment, then
// closes: for at most maxLingering connections at once, past which c is
// answered and closed at once.
func (l *Listener) refuse(c net.Conn, reason string) {
	if l.onRefuse != nil {
		l.onRefuse(reason)
	}
	if len(l.refusal) == 0 {
		c.Close()
		return
	}
	select {
	case l.lingering <- struct{}{}:
		go func() {
			defer func() { <-l.lingering }()
			answerThenClose(c, l.refusal)
		}()
	default:
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		c.Write(l.refusal)
		c.Close()
	}
}

// Bounds on refusing connections: how many are answered and drained at
// once, how long the wait for a request and the draining last, and how
// much is read of each.
const (
	maxLingering   = 64
	lingerFor      = 500 * time.Millisecond
	maxLingerBytes = 1 << 20
)

// answerThenClose waits at most lingerFor for c's request to begin,
// writes answer (which fits in the new socket's empty send buffer: the
// write deadline is a safeguard), ends the sending side (the client reads
// the answer, then end of file), reads and drops what the client still
// sends until it closes or lingerFor passes, and closes c.
func answerThenClose(c net.Conn, answer []byte) {
	c.SetReadDeadline(time.Now().Add(lingerFor))
	c.Read(make([]byte, 4096))
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	c.Write(answer)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(lingerFor))
	io.Copy(io.Discard, io.LimitReader(c, maxLingerBytes))
	c.Close()
}

func remoteIP(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// conn gives its slot back when it is first closed.
type conn struct {
	net.Conn
	l    *Listener
	ip   string
	once sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.ip) })
	return err
}
