package testcluster

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// WriteLoad is a steady write load on a process cluster: one client
// creating traits CUSTOM_<PREFIX>_<N> in turn, each through the next
// running node (followers forward to the leader), each retried with the
// same name while it fails (a create is idempotent: 201, then 204). It
// records when each write was acknowledged, so a test can check that
// every acknowledged write is readable afterwards.
type WriteLoad struct {
	prefix string
	nodes  func() Procs
	stop   chan struct{}
	done   chan struct{}

	mu     sync.Mutex
	acked  []AckedWrite
	failed int // attempts answered with an error or a status other than 201/204
}

// AckedWrite is a write and when its acknowledgement arrived.
type AckedWrite struct {
	Path string
	At   time.Time
}

// StartWriteLoad starts writing through the nodes nodes returns (asked
// before each write, so restarted or new nodes are used as they come).
func StartWriteLoad(prefix string, nodes func() Procs) *WriteLoad {
	w := &WriteLoad{prefix: prefix, nodes: nodes, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *WriteLoad) run() {
	defer close(w.done)
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	turn := 0
	for i := 0; ; i++ {
		path := fmt.Sprintf("/traits/CUSTOM_%s_%d", w.prefix, i)
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			var ok bool
			if ns := w.nodes(); len(ns) > 0 {
				n := ns[turn%len(ns)]
				turn++
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				r, err := SendContext(ctx, hc, "http://"+n.HTTPAddr, "PUT", path, nil)
				cancel()
				ok = err == nil && (r.Status == 201 || r.Status == 204)
			}
			w.mu.Lock()
			if ok {
				w.acked = append(w.acked, AckedWrite{Path: path, At: time.Now()})
			} else {
				w.failed++
			}
			w.mu.Unlock()
			if ok {
				break
			}
			select {
			case <-w.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
		// A steady load, not a flood: the machine is shared.
		select {
		case <-w.stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Stop ends the load and waits for its last write to finish.
func (w *WriteLoad) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// Acked returns the writes acknowledged before t (all of them for the
// zero time).
func (w *WriteLoad) Acked(before time.Time) []AckedWrite {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []AckedWrite
	for _, a := range w.acked {
		if before.IsZero() || a.At.Before(before) {
			out = append(out, a)
		}
	}
	return out
}

// Failed is how many attempts failed (each retried until acknowledged).
func (w *WriteLoad) Failed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// Readable checks that every write in acked reads back (204) on node n.
func Readable(n *Proc, acked []AckedWrite) error {
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	for _, a := range acked {
		r, err := Send(hc, "http://"+n.HTTPAddr, "GET", a.Path, nil)
		if err != nil {
			return fmt.Errorf("%s: GET %s: %v", n.ID, a.Path, err)
		}
		if r.Status != 204 {
			return fmt.Errorf("%s: GET %s (acknowledged at %s): %d %s", n.ID, a.Path, a.At.Format("15:04:05.000"), r.Status, r.Body)
		}
	}
	return nil
}
