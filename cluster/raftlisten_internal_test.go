package cluster

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

var quietLog = hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard})

// Every version and every node must derive the same CA from a secret, or
// nodes of different versions would not recognise each other: the CA
// certificate of a known secret is pinned.
func TestRaftCAFromSecretIsFixed(t *testing.T) {
	ca, _, err := raftCAFromSecret("test-secret")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(ca.Raw)
	const want = "ed9d3bb1e2f8495d192e5acb175057352795e2960e1acc27d7b2e02c9e8f590f"
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("the CA derived from the secret changed: sha256 %s, want %s", got, want)
	}
	other, _, err := raftCAFromSecret("another secret")
	if err != nil {
		t.Fatal(err)
	}
	if other.Equal(ca) || string(other.RawSubjectPublicKeyInfo) == string(ca.RawSubjectPublicKeyInfo) {
		t.Fatal("two secrets derived the same CA")
	}
}

// listenRaft starts a raftListener on loopback with the server side of
// the TLS derived from secret.
func listenRaft(t *testing.T, secret string, limits RaftConnLimits) *raftListener {
	t.Helper()
	cfg, err := RaftTLSFromSecret(secret, "server")
	if err != nil {
		t.Fatal(err)
	}
	server, _, err := raftTLSConfigs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newRaftListener(ln, server, limits, quietLog)
	t.Cleanup(func() { l.Close() })
	return l
}

// dialRaft connects to l as a member with secret would: TLS with a
// certificate derived from it, handshake done.
func dialRaft(t *testing.T, l *raftListener, secret string) (*tls.Conn, error) {
	t.Helper()
	return dialRaftFrom(t, l, secret, "")
}

// dialRaftFrom is dialRaft from the local IP address from ("": any).
func dialRaftFrom(t *testing.T, l *raftListener, secret, from string) (*tls.Conn, error) {
	t.Helper()
	cfg, err := RaftTLSFromSecret(secret, "client")
	if err != nil {
		t.Fatal(err)
	}
	_, client, err := raftTLSConfigs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := tls.DialWithDialer(d, "tcp", l.Addr().String(), client)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// closedByServer reports whether the server closed c, reading with a
// deadline far beyond the server's own: a timeout here means c is open.
func closedByServer(c net.Conn, within time.Duration) (bool, error) {
	c.SetReadDeadline(time.Now().Add(within))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false, err
	}
	return err != nil, err
}

// acceptAll runs Accept as raft does and hands over what it returns.
func acceptAll(l *raftListener) chan net.Conn {
	out := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(out)
				return
			}
			out <- c
		}
	}()
	return out
}

// A connection that never completes the TLS handshake, one that completes
// it and then sends nothing, and one whose certificate comes from another
// secret are all closed by the listener and never reach raft (which would
// give each a 256 KiB buffer and no deadline). The deadlines here are
// short so that the test does not wait for the real ones; the clients
// wait far longer, so a timeout on their side means the server held on.
func TestRaftListenerClosesUnauthenticated(t *testing.T) {
	l := listenRaft(t, "the secret", RaftConnLimits{Handshake: 300 * time.Millisecond, FirstMessage: 300 * time.Millisecond, MaxPending: 8, MaxOpen: 8})
	accepted := acceptAll(l)

	raw, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if closed, err := closedByServer(raw, 20*time.Second); !closed {
		t.Errorf("no handshake: still open after 20s (%v)", err)
	}

	silent, err := dialRaft(t, l, "the secret")
	if err != nil {
		t.Fatalf("a member's handshake failed: %v", err)
	}
	if closed, err := closedByServer(silent, 20*time.Second); !closed {
		t.Errorf("handshake and no message: still open after 20s (%v)", err)
	}

	// A client of another secret that would accept any server: the
	// server refuses its certificate. In TLS 1.3 the client's handshake
	// finishes before the server has checked it: the refusal arrives as
	// an alert on the first read.
	otherCfg, err := RaftTLSFromSecret("another secret", "stranger")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &otherCfg.Certificates[0], nil
		},
	})
	if err == nil {
		defer stranger.Close()
		stranger.Write([]byte{0})
		stranger.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err = stranger.Read(make([]byte, 1))
	}
	if err == nil || !strings.Contains(err.Error(), "remote error: tls") {
		t.Errorf("a certificate of another secret: %v, want the server's TLS alert", err)
	}

	// A member that speaks is admitted, its first byte kept.
	member, err := dialRaft(t, l, "the secret")
	if err != nil {
		t.Fatal(err)
	}
	if v := member.ConnectionState().Version; v != tls.VersionTLS13 {
		t.Errorf("TLS version %x, want 1.3", v)
	}
	member.Write([]byte("raft"))
	c := <-accepted
	defer c.Close()
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "raft" {
		t.Fatalf("admitted connection read %q, %v", got, err)
	}
	select {
	case extra := <-accepted:
		t.Fatalf("the listener handed raft an unauthenticated connection from %s", extra.RemoteAddr())
	default:
	}
}

// Past MaxPending connections in handshake, and past MaxOpen connections
// held by raft, new connections are closed at once; a slot frees when a
// connection ends.
func TestRaftListenerCaps(t *testing.T) {
	l := listenRaft(t, "the secret", RaftConnLimits{Handshake: time.Minute, FirstMessage: time.Minute, MaxPending: 2, MaxOpen: 1})
	accepted := acceptAll(l)

	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	// The listener takes connections in order: the third finds both
	// handshake places taken.
	third, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if closed, err := closedByServer(third, 20*time.Second); !closed {
		t.Errorf("a third connection in handshake was kept (%v)", err)
	}
	for i, c := range idle {
		if closed, err := closedByServer(c, 200*time.Millisecond); closed {
			t.Errorf("idle connection %d was closed before its handshake deadline: %v", i, err)
		}
		c.Close()
	}

	// MaxOpen: one member connection held by raft, the next refused.
	first := admitMember(t, l, accepted)
	second, err := dialRaft(t, l, "the secret")
	if err != nil {
		t.Fatal(err)
	}
	second.Write([]byte{0})
	if closed, err := closedByServer(second, 20*time.Second); !closed {
		t.Errorf("a connection past MaxOpen was kept (%v)", err)
	}
	first.Close()
	admitMember(t, l, accepted).Close()
}

// Past MaxPerSource connections from one address, pending or held by
// raft, new ones from that address are closed at once, while another
// address is still served; a place frees when a connection ends.
func TestRaftListenerPerSource(t *testing.T) {
	const hostile, peer = "127.0.0.2", "127.0.0.3"
	l := listenRaft(t, "the secret", RaftConnLimits{Handshake: time.Minute, FirstMessage: time.Minute, MaxPending: 8, MaxOpen: 8, MaxPerSource: 3})
	accepted := acceptAll(l)
	from := func(ip string) net.Conn {
		t.Helper()
		c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).Dial("tcp", l.Addr().String())
		if err != nil {
			t.Skipf("dialing from %s: %v", ip, err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// A member connection held by raft and two silent ones take the
	// hostile address's three places.
	held := admitMemberFrom(t, l, accepted, hostile)
	silent := []net.Conn{from(hostile), from(hostile)}
	// The listener takes connections in order: the fourth finds the
	// address's places taken, though the listener has room.
	fourth := from(hostile)
	if closed, err := closedByServer(fourth, 20*time.Second); !closed {
		t.Errorf("a fourth connection from one address was kept (%v)", err)
	}
	for i, c := range silent {
		if closed, err := closedByServer(c, 200*time.Millisecond); closed {
			t.Errorf("silent connection %d was closed before its deadline: %v", i, err)
		}
	}
	// Another address is served meanwhile, up to its own three.
	for range 3 {
		admitMemberFrom(t, l, accepted, peer)
	}
	// Closing a connection gives its address a place back, held or not.
	held.Close()
	admitMemberFrom(t, l, accepted, hostile)
	silent[0].Close()
	admitMemberFrom(t, l, accepted, hostile)
}

// admitMember dials l as a member, sends a byte and returns the
// connection as raft received it.
func admitMember(t *testing.T, l *raftListener, accepted chan net.Conn) net.Conn {
	t.Helper()
	return admitMemberFrom(t, l, accepted, "")
}

// admitMemberFrom is admitMember from the local IP address from.
func admitMemberFrom(t *testing.T, l *raftListener, accepted chan net.Conn, from string) net.Conn {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		// The place of a connection just closed frees when the listener
		// sees it closed: until then the listener closes a new one from
		// that address at once (the handshake fails) or holds it back.
		// Retry until then.
		c, err := dialRaftFrom(t, l, "the secret", from)
		if err != nil {
			select {
			case <-time.After(10 * time.Millisecond):
				continue
			case <-deadline:
				t.Fatalf("no member connection admitted: %v", err)
			}
		}
		c.Write([]byte{0})
		select {
		case got := <-accepted:
			return got
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("no member connection admitted")
		}
		c.Close()
	}
}

// Closing the listener (raft's transport shutting down) closes the
// connections still in handshake, rather than leaving them to their
// deadlines.
func TestRaftListenerCloseEndsPending(t *testing.T) {
	l := listenRaft(t, "the secret", RaftConnLimits{Handshake: time.Minute, FirstMessage: time.Minute, MaxPending: 4, MaxOpen: 4})
	raw, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// Wait until the listener holds it in handshake.
	waitUntil(t, func() bool { return l.pending.inUse() == 1 })
	l.Close()
	if closed, err := closedByServer(raw, 20*time.Second); !closed {
		t.Errorf("a connection in handshake outlived the listener (%v)", err)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A flood of silent connections from many addresses takes the places
// strangers may take, and no more: members (the addresses of the Raft
// configuration) still connect, in handshake and held by raft. A flood
// that came before the members were known gives way to them. Before, the
// flood took every place and 27 of 28 members' handshakes failed.
func TestRaftListenerKeepsPlacesForMembers(t *testing.T) {
	const member = "127.0.0.1"
	limits := RaftConnLimits{Handshake: time.Minute, FirstMessage: time.Minute, MaxPending: 16, MaxOpen: 16, MaxPerSource: 4}
	flood := func(l *raftListener) []net.Conn {
		var conns []net.Conn
		for i := range 60 {
			ip := fmt.Sprintf("127.0.%d.%d", 1+i/200, 2+i%200)
			c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).Dial("tcp", l.Addr().String())
			if err != nil {
				t.Skipf("dialing from %s: %v", ip, err)
			}
			t.Cleanup(func() { c.Close() })
			conns = append(conns, c)
		}
		// The listener takes connections in order: the flood has had its
		// places once the last one is refused.
		if closed, err := closedByServer(conns[len(conns)-1], 20*time.Second); !closed {
			t.Fatalf("the flood's last connection was kept (%v)", err)
		}
		return conns
	}

	l := listenRaft(t, "the secret", limits)
	l.setMembers([]string{member, "127.0.0.250"})
	accepted := acceptAll(l)
	flood(l)
	if got := l.pending.inUse(); got != 8 {
		t.Errorf("%d connections in handshake, want the strangers' 8", got)
	}
	// A member gets its places, up to its per-address bound.
	for range 4 {
		admitMemberFrom(t, l, accepted, member)
	}

	// Members unknown: the flood takes every place, then members come
	// and take strangers' places.
	l = listenRaft(t, "the secret", limits)
	accepted = acceptAll(l)
	flood(l)
	if got := l.pending.inUse(); got != 16 {
		t.Errorf("%d connections in handshake, want all 16", got)
	}
	l.setMembers([]string{member})
	for range 4 {
		admitMemberFrom(t, l, accepted, member)
	}
}
