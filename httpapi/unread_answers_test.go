package httpapi

import (
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"runtime"
	"time"

	"github.com/placementd/placementd/internal/testcluster"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// smallSendBuffers gives every accepted connection a small send buffer,
// so that an answer a client does not read stays in the server's memory
// instead of the kernel's.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// unreadRequest sends a GET on a connection that never reads the answer
// (its receive buffer kept small).
func unreadRequest(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\nOpenStack-API-Version: placement 1.39\r\n\r\n", path)
	return c
}

// vmRSS is the process's resident memory, from /proc (0 elsewhere).
func vmRSS() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:"))
		}
	}
	return "?"
}

// Clients that never read their allocation-candidates answers hold at
// most --max-answer-mb of them: the answers past it wait for room, then
// are refused 503 placement.server.busy; the write timeout cuts the
// others and gives their room back. Before, every answer was held until
// the write timeout (98 such clients took a node from 0.25 to 1.6 GB).
func TestUnreadAnswersAreBounded(t *testing.T) {
	seed, _, _ := deviceHostAPI(t, Config{}, 12, "VCPU", 4)
	const query = "/allocation_candidates?resources1=VCPU:1&resources2=VCPU:1&resources3=VCPU:1&group_policy=none"
	const budget = 2 << 20 // three answers of 0.6 MB
	w := newWatch()
	api := New(seed.Node, Config{MaxAnswerBytes: budget, AdmissionWait: 300 * time.Millisecond, Observer: w,
		Logger: slog.New(slog.DiscardHandler)})
	var admitted atomic.Int64 // answers given room
	api.onAdmitted = func(kind string) {
		if kind == AdmitAnswer {
			admitted.Add(1)
		}
	}
	srv := httptest.NewUnstartedServer(api)
	srv.Listener = smallSendBuffers{srv.Listener}
	srv.Config.WriteTimeout = 5 * time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const clients = 100
	for range clients {
		c := unreadRequest(t, addr, query)
		t.Cleanup(func() { c.Close() })
	}
	busy := func() int {
		n := 0
		for _, a := range w.abortedList() {
			if a == "/allocation_candidates:"+AbortBusy {
				n++
			}
		}
		return n
	}
	held := func() int64 { return api.answerBytes.InUse() }
	// Every request is searched and its answer rendered, then given room
	// or refused (as is a search that found no slot in time): room never
	// goes past the budget. As the write timeout cuts clients, their room
	// goes to others.
	testcluster.WaitFor(t, 2*time.Minute, "every answer given room or refused", func() error {
		if h := held(); h > budget {
			t.Fatalf("%d bytes of answers held, budget %d", h, budget)
		}
		if n, a := busy(), admitted.Load(); n+int(a) < clients {
			return fmt.Errorf("%d refused busy, %d given room, %d bytes held", n, a, held())
		}
		return nil
	})
	var during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&during)
	t.Logf("%d clients not reading: %d refused busy, %d given room, %d bytes of answers held; heap %d MiB -> %d MiB, RSS %s",
		clients, busy(), admitted.Load(), held(), before.HeapInuse>>20, during.HeapInuse>>20, vmRSS())
	if busy() == 0 || admitted.Load() == 0 {
		t.Fatalf("%d refused, %d given room: want both", busy(), admitted.Load())
	}
	// The write timeout cuts the clients that do not read, and their
	// room comes back (they never closed their connections).
	testcluster.WaitFor(t, 30*time.Second, "room back after the write timeout", func() error {
		if h := held(); h != 0 {
			return fmt.Errorf("%d bytes held", h)
		}
		return nil
	})
	if st := testcluster.Do(t, srv.URL, "GET", query, nil, "OpenStack-API-Version", "placement 1.39").Status; st != 200 {
		t.Fatalf("a reading client afterwards: %d", st)
	}
}
