package httpguard

import (
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
		onRefuse: onRefuse, perIPOpen: map[string]int{}}
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

// refuse answers and closes c. The answer goes into the new socket's
// empty send buffer, so the write does not wait; the deadline is a
// safeguard.
func (l *Listener) refuse(c net.Conn, reason string) {
	if l.onRefuse != nil {
		l.onRefuse(reason)
	}
	if len(l.refusal) > 0 {
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		c.Write(l.refusal)
	}
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
