package wanlab

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/placementd/placementd/internal/wanlab/nfqueue"
)

// The delayer is the process that stands in for netem: the hub's iptables
// rule queues every forwarded packet to it (NFQUEUE), it looks up the link
// from the packet's source to its destination, holds the packet for the
// link's one-way delay plus a uniform jitter in [-Jitter, +Jitter], then
// accepts it; on a cut link it drops it. Packets of one link leave in the
// order they came (a packet never overtakes the one before it, as on one
// real path), so jitter delays some packets more but reorders none.
//
// It reads its table from its standard input, one JSON request a line,
// and answers each on its standard output; it exits when its input closes,
// so it never outlives the lab that started it.

// Link is the path from one host to another, one direction.
type Link struct {
	Delay  time.Duration `json:"delay"`  // one way
	Jitter time.Duration `json:"jitter"` // ± around Delay, uniform
	Cut    bool          `json:"cut"`    // every packet dropped
}

// linkRule is a Link between two addresses, as the delayer's table holds it.
type linkRule struct {
	Src, Dst netip.Addr
	Link
}

// delayerRequest is one line of the control protocol: "set" replaces the
// whole table; "stats" asks for the counters.
type delayerRequest struct {
	Op    string     `json:"op"`
	Links []linkRule `json:"links,omitempty"`
}

type delayerReply struct {
	OK    bool          `json:"ok"`
	Error string        `json:"error,omitempty"`
	Stats *DelayerStats `json:"stats,omitempty"`
}

// DelayerStats count what the delayer did since it started.
type DelayerStats struct {
	Packets  uint64 `json:"packets"` // seen
	Delayed  uint64 `json:"delayed"` // held before acceptance
	Dropped  uint64 `json:"dropped"` // on cut links
	Held     int    `json:"held"`    // held now
	MaxLate  int64  `json:"max_late_us"`
	MeanLate int64  `json:"mean_late_us"` // release after the due time (timer lateness)
}

type pairKey struct{ src, dst netip.Addr }

type heldPacket struct {
	due time.Time
	seq uint64 // keeps packets due at the same instant in arrival order
	id  uint32
	key pairKey
}

type heldHeap []heldPacket

func (h heldHeap) Len() int { return len(h) }
func (h heldHeap) Less(i, j int) bool {
	return h[i].due.Before(h[j].due) || h[i].due.Equal(h[j].due) && h[i].seq < h[j].seq
}
func (h heldHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heldHeap) Push(x any)   { *h = append(*h, x.(heldPacket)) }
func (h *heldHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type delayer struct {
	q     *nfqueue.Queue
	table atomic.Pointer[map[pairKey]Link]

	mu       sync.Mutex
	held     heldHeap
	seq      uint64
	lastDue  map[pairKey]time.Time // per link, so that packets keep their order
	wake     chan struct{}
	stats    DelayerStats
	lateSum  int64
	released uint64
}

// RunDelayer serves NFQUEUE queue num in the calling process's network
// namespace until ctrl (its control input) ends. The wan-delayer command
// runs it inside the hub namespace.
func RunDelayer(num uint16, ctrl io.Reader, replies io.Writer) error {
	q, err := nfqueue.Open(num, 40, 65536)
	if err != nil {
		return err
	}
	defer q.Close()
	d := &delayer{q: q, lastDue: map[pairKey]time.Time{}, wake: make(chan struct{}, 1)}
	empty := map[pairKey]Link{}
	d.table.Store(&empty)
	go d.receive()
	go d.release()
	in := bufio.NewScanner(ctrl)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	enc := json.NewEncoder(replies)
	for in.Scan() {
		var req delayerRequest
		reply := delayerReply{OK: true}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			reply = delayerReply{Error: err.Error()}
		} else {
			switch req.Op {
			case "set":
				t := make(map[pairKey]Link, len(req.Links))
				for _, l := range req.Links {
					t[pairKey{l.Src, l.Dst}] = l.Link
				}
				d.table.Store(&t)
			case "stats":
				s := d.snapshot()
				reply.Stats = &s
			default:
				reply = delayerReply{Error: fmt.Sprintf("unknown op %q", req.Op)}
			}
		}
		if err := enc.Encode(reply); err != nil {
			return err
		}
	}
	return in.Err()
}

func (d *delayer) snapshot() DelayerStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.stats
	s.Held = len(d.held)
	if d.released > 0 {
		s.MeanLate = d.lateSum / int64(d.released)
	}
	return s
}

// receive takes packets from the queue: those of cut links are dropped,
// those of links without delay accepted at once, the others held.
func (d *delayer) receive() {
	var batch []nfqueue.Packet
	var accept, drop []uint32
	for {
		var err error
		batch, err = d.q.Receive(batch[:0])
		if err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOBUFS) {
				continue // an overrun: the kernel dropped those packets
			}
			return
		}
		now := time.Now()
		table := *d.table.Load()
		accept, drop = accept[:0], drop[:0]
		d.mu.Lock()
		for _, p := range batch {
			d.stats.Packets++
			key := pairKey{p.Src, p.Dst}
			l := table[key]
			switch {
			case l.Cut:
				d.stats.Dropped++
				drop = append(drop, p.ID)
			case l.Delay <= 0 && l.Jitter <= 0:
				accept = append(accept, p.ID)
			default:
				due := now.Add(l.Delay)
				if l.Jitter > 0 {
					due = due.Add(time.Duration(rand.Int64N(int64(2*l.Jitter)+1)) - l.Jitter)
				}
				if last := d.lastDue[key]; due.Before(last) {
					due = last
				}
				d.lastDue[key] = due
				d.seq++
				heap.Push(&d.held, heldPacket{due: due, seq: d.seq, id: p.ID, key: key})
				d.stats.Delayed++
			}
		}
		d.mu.Unlock()
		d.q.Verdicts(accept, drop)
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// release accepts held packets when they are due; a packet whose link was
// cut while it was held is dropped, as a partition loses packets in flight.
func (d *delayer) release() {
	timer := time.NewTimer(time.Hour)
	var accept, drop []uint32
	for {
		now := time.Now()
		table := *d.table.Load()
		accept, drop = accept[:0], drop[:0]
		next := time.Hour
		d.mu.Lock()
		for len(d.held) > 0 {
			p := d.held[0]
			if wait := p.due.Sub(now); wait > 0 {
				next = wait
				break
			}
			heap.Pop(&d.held)
			late := now.Sub(p.due).Microseconds()
			d.lateSum += late
			d.released++
			d.stats.MaxLate = max(d.stats.MaxLate, late)
			if table[p.key].Cut {
				d.stats.Dropped++
				drop = append(drop, p.id)
			} else {
				accept = append(accept, p.id)
			}
		}
		d.mu.Unlock()
		d.q.Verdicts(accept, drop)
		timer.Reset(next) // Go 1.23 timers: no stale tick survives a Reset
		select {
		case <-timer.C:
		case <-d.wake:
		}
	}
}
