package nfqueue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Netlink and nfnetlink_queue constants (linux/netfilter/nfnetlink.h,
// nfnetlink_queue.h); x/sys/unix does not carry the queue's own.
const (
	subsysQueue = 3 // NFNL_SUBSYS_QUEUE

	msgPacket  = 0 // NFQNL_MSG_PACKET
	msgVerdict = 1 // NFQNL_MSG_VERDICT
	msgConfig  = 2 // NFQNL_MSG_CONFIG

	attrPacketHdr  = 1  // NFQA_PACKET_HDR
	attrVerdictHdr = 2  // NFQA_VERDICT_HDR
	attrPayload    = 10 // NFQA_PAYLOAD

	cfgCmd      = 1 // NFQA_CFG_CMD
	cfgParams   = 2 // NFQA_CFG_PARAMS
	cfgQueueLen = 3 // NFQA_CFG_QUEUE_MAXLEN
	cfgMask     = 4 // NFQA_CFG_MASK
	cfgFlags    = 5 // NFQA_CFG_FLAGS

	cmdBind    = 1 // NFQNL_CFG_CMD_BIND
	copyPacket = 2 // NFQNL_COPY_PACKET
	flagGSO    = 4 // NFQA_CFG_F_GSO: hand over GSO packets whole

	nfDrop   = 0 // NF_DROP
	nfAccept = 1 // NF_ACCEPT

	nlmsgHdrLen = 16
	nfgenHdrLen = 4
)

// Packet is one queued IPv4 packet: its queue id and addresses.
type Packet struct {
	ID       uint32
	Src, Dst netip.Addr
}

// Queue is one bound NFQUEUE.
type Queue struct {
	fd  int
	num uint16
	seq uint32
	buf []byte
}

// Open binds queue num in the calling thread's network namespace. Each
// packet is copied up to copyBytes (its IP header is all the delayer
// reads); maxLen bounds the packets the kernel holds for this queue.
func Open(num uint16, copyBytes, maxLen uint32) (*Queue, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	q := &Queue{fd: fd, num: num, buf: make([]byte, 1<<20)}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		q.Close()
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	// A large receive buffer rides out bursts; when it overflows anyway
	// the kernel drops the packet, which is what a full router queue
	// does, so the socket need not report it.
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
	unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_NO_ENOBUFS, 1)

	cmd := []byte{cmdBind, 0, 0, unix.AF_INET}
	params := make([]byte, 5)
	binary.BigEndian.PutUint32(params, copyBytes)
	params[4] = copyPacket
	if err := q.request(msgConfig, attr(cfgCmd, cmd)); err != nil {
		q.Close()
		return nil, fmt.Errorf("binding queue %d: %w", num, err)
	}
	be32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	cfg := append(attr(cfgParams, params), attr(cfgQueueLen, be32(maxLen))...)
	cfg = append(cfg, attr(cfgMask, be32(flagGSO))...)
	cfg = append(cfg, attr(cfgFlags, be32(flagGSO))...)
	if err := q.request(msgConfig, cfg); err != nil {
		q.Close()
		return nil, fmt.Errorf("configuring queue %d: %w", num, err)
	}
	return q, nil
}

// Close unbinds the queue by closing its socket: the kernel drops the
// packets it still held for it.
func (q *Queue) Close() error { return unix.Close(q.fd) }

// attr encodes one netlink attribute, padded to 4 bytes.
func attr(typ uint16, data []byte) []byte {
	b := make([]byte, 4, 4+len(data)+3)
	binary.NativeEndian.PutUint16(b, uint16(4+len(data)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// message encodes one nfnetlink message of the queue subsystem.
func (q *Queue) message(typ, flags uint16, seq uint32, attrs []byte) []byte {
	b := make([]byte, nlmsgHdrLen+nfgenHdrLen, nlmsgHdrLen+nfgenHdrLen+len(attrs))
	binary.NativeEndian.PutUint32(b, uint32(nlmsgHdrLen+nfgenHdrLen+len(attrs)))
	binary.NativeEndian.PutUint16(b[4:], subsysQueue<<8|typ)
	binary.NativeEndian.PutUint16(b[6:], unix.NLM_F_REQUEST|flags)
	binary.NativeEndian.PutUint32(b[8:], seq)
	b[16] = unix.AF_UNSPEC
	b[17] = 0 // NFNETLINK_V0
	binary.BigEndian.PutUint16(b[18:], q.num)
	return append(b, attrs...)
}

// request sends a message asking for an acknowledgement and waits for it.
// It is used only before packets flow.
func (q *Queue) request(typ uint16, attrs []byte) error {
	q.seq++
	msg := q.message(typ, unix.NLM_F_ACK, q.seq, attrs)
	if err := unix.Sendto(q.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	for {
		n, _, err := unix.Recvfrom(q.fd, q.buf, 0)
		if err != nil {
			return err
		}
		for b := q.buf[:n]; len(b) >= nlmsgHdrLen; {
			l := int(binary.NativeEndian.Uint32(b))
			if l < nlmsgHdrLen || l > len(b) {
				return errors.New("netlink: truncated message")
			}
			typ := binary.NativeEndian.Uint16(b[4:])
			seq := binary.NativeEndian.Uint32(b[8:])
			if typ == unix.NLMSG_ERROR && seq == q.seq && l >= nlmsgHdrLen+4 {
				if code := int32(binary.NativeEndian.Uint32(b[nlmsgHdrLen:])); code != 0 {
					return unix.Errno(-code)
				}
				return nil
			}
			b = b[align(l):]
		}
	}
}

func align(n int) int { return (n + 3) &^ 3 }

// Receive blocks until the kernel hands over queued packets and appends
// them to out. Packets other than IPv4 are returned with zero addresses.
func (q *Queue) Receive(out []Packet) ([]Packet, error) {
	n, _, err := unix.Recvfrom(q.fd, q.buf, 0)
	if err != nil {
		return out, err
	}
	for b := q.buf[:n]; len(b) >= nlmsgHdrLen; {
		l := int(binary.NativeEndian.Uint32(b))
		if l < nlmsgHdrLen || l > len(b) {
			return out, errors.New("netlink: truncated message")
		}
		typ := binary.NativeEndian.Uint16(b[4:])
		if typ == subsysQueue<<8|msgPacket && l >= nlmsgHdrLen+nfgenHdrLen {
			if p, ok := parsePacket(b[nlmsgHdrLen+nfgenHdrLen : l]); ok {
				out = append(out, p)
			}
		}
		b = b[min(align(l), len(b)):]
	}
	return out, nil
}

func parsePacket(attrs []byte) (Packet, bool) {
	var p Packet
	haveID := false
	for len(attrs) >= 4 {
		l := int(binary.NativeEndian.Uint16(attrs))
		typ := binary.NativeEndian.Uint16(attrs[2:]) & 0x3fff // without NLA_F_NESTED and NLA_F_NET_BYTEORDER
		if l < 4 || l > len(attrs) {
			break
		}
		data := attrs[4:l]
		switch typ {
		case attrPacketHdr:
			if len(data) >= 4 {
				p.ID, haveID = binary.BigEndian.Uint32(data), true
			}
		case attrPayload:
			if len(data) >= 20 && data[0]>>4 == 4 {
				p.Src = netip.AddrFrom4([4]byte(data[12:16]))
				p.Dst = netip.AddrFrom4([4]byte(data[16:20]))
			}
		}
		attrs = attrs[min(align(l), len(attrs)):]
	}
	return p, haveID
}

// Verdicts sends one verdict per id, accept or drop, in a single write.
// It may run concurrently with Receive (verdicts ask for no answer).
func (q *Queue) Verdicts(accept, drop []uint32) error {
	var buf []byte
	for _, ids := range []struct {
		v   uint32
		ids []uint32
	}{{nfAccept, accept}, {nfDrop, drop}} {
		for _, id := range ids.ids {
			hdr := make([]byte, 8)
			binary.BigEndian.PutUint32(hdr, ids.v)
			binary.BigEndian.PutUint32(hdr[4:], id)
			buf = append(buf, q.message(msgVerdict, 0, 0, attr(attrVerdictHdr, hdr))...)
		}
	}
	if len(buf) == 0 {
		return nil
	}
	return unix.Sendto(q.fd, buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}
