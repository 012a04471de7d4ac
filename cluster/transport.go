package cluster

import (
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

// tcpStream is raft's StreamLayer over plain TCP with an advertised address
// that may differ from the bound one (--raft-addr 0.0.0.0:8779 behind
// --raft-advertise node1:8779).
type tcpStream struct {
	net.Listener
	advertise net.Addr
}

func (s *tcpStream) Addr() net.Addr { return s.advertise }

func (s *tcpStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}

// newTCPTransport listens on bind and advertises advertise, or the bound
// address when advertise is empty (which must then be a specific IP).
func newTCPTransport(bind, advertise string, logger hclog.Logger) (*raft.NetworkTransport, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("raft address %q: %w", bind, err)
	}
	var adv net.Addr = ln.Addr()
	if advertise != "" {
		if _, _, err := net.SplitHostPort(advertise); err != nil {
			ln.Close()
			return nil, fmt.Errorf("raft advertise address %q: %w", advertise, err)
		}
		adv = hostAddr(advertise)
	} else if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("raft address %q is not one other nodes can dial: set --raft-advertise", bind)
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  &tcpStream{Listener: ln, advertise: adv},
		MaxPool: 3, Timeout: 10 * time.Second, Logger: logger,
		MsgpackUseNewTimeFormat: true,
	}), nil
}
