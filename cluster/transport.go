package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// hostAddr is an advertised address kept as written (a host name stays a
// host name), so a container that restarts with a new IP is still reached
// under its name. raft's own TCP transport insists on a resolved IP.
type hostAddr string

func (a hostAddr) Network() string { return "tcp" }
func (a hostAddr) String() string  { return string(a) }

// tcpStream is raft's StreamLayer over TCP with an advertised address that
// may differ from the bound one (--raft-addr 0.0.0.0:8779 behind
// --raft-advertise node1:8779). With tls set, the listener is a TLS one
// that requires a client certificate, and Dial speaks TLS too.
type tcpStream struct {
	net.Listener
	advertise net.Addr
	tls       *tls.Config // the dialing side; nil: plain TCP
}

func (s *tcpStream) Addr() net.Addr { return s.advertise }

func (s *tcpStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if s.tls == nil {
		return d.Dial("tcp", string(addr))
	}
	// The timeout covers the handshake too.
	return tls.DialWithDialer(d, "tcp", string(addr), s.tls)
}

// newTCPTransport listens on bind and advertises advertise, or the bound
// address when advertise is empty (which must then be a specific IP).
// With tlsConf (see Config.RaftTLS) every connection is mutual TLS.
// limits bound the inbound connections; the listener returned is told the
// members' addresses (raftListener.setMembers).
func newTCPTransport(bind, advertise string, tlsConf *tls.Config, limits RaftConnLimits, logger hclog.Logger) (*raft.NetworkTransport, *raftListener, error) {
	var server, client *tls.Config
	if tlsConf != nil {
		var err error
		if server, client, err = raftTLSConfigs(tlsConf); err != nil {
			return nil, nil, err
		}
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, nil, fmt.Errorf("raft address %q: %w", bind, err)
	}
	var adv net.Addr = ln.Addr()
	if advertise != "" {
		if _, _, err := net.SplitHostPort(advertise); err != nil {
			ln.Close()
			return nil, nil, fmt.Errorf("raft advertise address %q: %w", advertise, err)
		}
		adv = hostAddr(advertise)
	} else if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		ln.Close()
		return nil, nil, fmt.Errorf("raft address %q is not one other nodes can dial: set --raft-advertise", bind)
	}
	// The listener runs the TLS handshake, in a goroutine per connection
	// so that a slow peer does not hold up Accept, and hands raft only
	// verified peers (raftlisten.go).
	rl := newRaftListener(ln, server, limits, logger)
	stream := &tcpStream{Listener: rl, advertise: adv, tls: client}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  stream,
		MaxPool: raftConnPool, Timeout: 10 * time.Second, Logger: logger,
		MsgpackUseNewTimeFormat: true,
	}), rl, nil
}

// raftConnPool is how many idle connections raft's transport keeps per
// peer.
const raftConnPool = 3

// raftTLSConfigs derives both sides of Raft's mutual TLS from c: this
// node's certificate (Certificates) and the cluster's CA (RootCAs).
//
// Membership is a certificate the cluster CA signed, checked both ways:
// the accepting side requires and verifies the dialer's certificate, the
// dialing side verifies the acceptor's. Host names are deliberately not
// checked: peers are dialed at the addresses in the Raft configuration
// (IPs, container names, whatever --raft-advertise said), which node
// certificates need not list, and a name check would add nothing when
// every member holds a certificate of the same CA. Go's client always
// checks the name, so the dialing side turns that check off
// (InsecureSkipVerify) and verifies the chain itself in VerifyConnection,
// which runs on every handshake, resumed ones included. Use a CA of its
// own for the cluster's Raft traffic: any certificate it signs is a member.
func raftTLSConfigs(c *tls.Config) (server, client *tls.Config, err error) {
	if c.RootCAs == nil {
		return nil, nil, errors.New("raft TLS: the cluster CA (RootCAs) is required")
	}
	if len(c.Certificates) == 0 || len(c.Certificates[0].Certificate) == 0 {
		return nil, nil, errors.New("raft TLS: this node's certificate is required")
	}
	// Fail at start, not at the first handshake, when the node's own
	// certificate would be refused by its peers.
	leaf := c.Certificates[0].Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(c.Certificates[0].Certificate[0]); err != nil {
			return nil, nil, fmt.Errorf("raft TLS: %w", err)
		}
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if err := verifyChain(c.RootCAs, leaf, intermediates(c.Certificates[0].Certificate[1:]), usage); err != nil {
			return nil, nil, fmt.Errorf("raft TLS: this node's certificate: %w (it must be signed by the raft CA and allow both serverAuth and clientAuth)", err)
		}
	}

	server = c.Clone()
	server.MinVersion = max(server.MinVersion, tls.VersionTLS12)
	server.ClientAuth = tls.RequireAndVerifyClientCert
	server.ClientCAs = c.RootCAs

	client = c.Clone()
	client.MinVersion = server.MinVersion
	client.InsecureSkipVerify = true // the name only: the chain is checked below
	client.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("raft TLS: the peer sent no certificate")
		}
		return verifyChain(c.RootCAs, cs.PeerCertificates[0], cs.PeerCertificates[1:], x509.ExtKeyUsageServerAuth)
	}
	return server, client, nil
}

// CheckRaftTLS reports whether c would do as Config.RaftTLS, so that a
// node refuses a bad setting before it writes anything.
func CheckRaftTLS(c *tls.Config) error {
	_, _, err := raftTLSConfigs(c)
	return err
}

func verifyChain(roots *x509.CertPool, leaf *x509.Certificate, inter []*x509.Certificate, usage x509.ExtKeyUsage) error {
	pool := x509.NewCertPool()
	for _, c := range inter {
		pool.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: pool, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

func intermediates(der [][]byte) []*x509.Certificate {
	var out []*x509.Certificate
	for _, d := range der {
		if c, err := x509.ParseCertificate(d); err == nil {
			out = append(out, c)
		}
	}
	return out
}
