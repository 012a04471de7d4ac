package wanlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"testing"
	"time"
)

// newTestLab builds the delayer and starts a lab, or skips the test with
// the reason when this machine cannot run one (not root, no iptables, no
// NFQUEUE) or PLACEMENTD_WANLAB=off asks to leave it out.
func newTestLab(t *testing.T) *Lab {
	t.Helper()
	if os.Getenv("PLACEMENTD_WANLAB") == "off" {
		t.Skip("PLACEMENTD_WANLAB=off")
	}
	if os.Geteuid() != 0 {
		t.Skip("the WAN lab needs root (network namespaces, iptables)")
	}
	bin, err := BuildDelayer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lab, err := New(bin)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lab.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
	})
	return lab
}

// echoServer answers every byte it reads with the same byte.
func echoServer(t *testing.T, h *Host) string {
	t.Helper()
	ln, err := h.Listen("tcp", net.JoinHostPort(h.Addr.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// roundTrips sends n one-byte echoes over c and returns their times, sorted.
func roundTrips(t *testing.T, c net.Conn, n int) []time.Duration {
	t.Helper()
	var out []time.Duration
	buf := make([]byte, 1)
	for range n {
		start := time.Now()
		c.SetDeadline(start.Add(5 * time.Second))
		if _, err := c.Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		out = append(out, time.Since(start))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TestLabDelaysAndPartitions is the lab's smoke test: one delayed link is
// measured, then cut and healed. A few seconds; it skips where no lab can
// run.
func TestLabDelaysAndPartitions(t *testing.T) {
	lab := newTestLab(t)
	a, err := lab.AddHost("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := lab.AddHost("b")
	if err != nil {
		t.Fatal(err)
	}
	addr := echoServer(t, b)
	c, err := a.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	base := roundTrips(t, c, 5)

	const rtt = 40 * time.Millisecond
	if err := lab.SetRTT("a", "b", rtt, 0); err != nil {
		t.Fatal(err)
	}
	delayed := roundTrips(t, c, 7)
	t.Logf("round trip a-b: %v without delay, %v (min %v) with %v", base[len(base)/2], delayed[len(delayed)/2], delayed[0], rtt)
	if delayed[0] < rtt {
		t.Fatalf("a round trip took %v, less than the link's %v", delayed[0], rtt)
	}
	// The upper bound is loose: timers on a loaded 2-core machine are late.
	if med := delayed[len(delayed)/2]; med > rtt+40*time.Millisecond {
		t.Fatalf("median round trip %v, far above the link's %v", med, rtt)
	}

	if err := lab.Isolate("b"); err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	c.Write([]byte{'y'})
	buf := make([]byte, 1)
	if n, err := c.Read(buf); err == nil {
		t.Fatalf("read %q across a cut link", buf[:n])
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := a.DialContext(ctx, "tcp", addr); err == nil {
		t.Fatal("dialed across a cut link")
	}

	// Healed, TCP retransmits the byte sent during the cut and the link
	// carries new connections again.
	if err := lab.Heal(); err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || buf[0] != 'y' {
		t.Fatalf("after healing: read %q, %v", buf, err)
	}
	c2, err := a.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatalf("dial after healing: %v", err)
	}
	c2.Close()
	st, err := lab.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("delayer: %+v", st)
	if st.Delayed == 0 || st.Dropped == 0 {
		t.Fatalf("the delayer neither delayed nor dropped: %+v", st)
	}
}

// TestLabRemovesWhatItMade checks Close and the cleanup of leftovers of
// a lab whose process is gone.
func TestLabRemovesWhatItMade(t *testing.T) {
	lab := newTestLab(t)
	h, err := lab.AddHost("x")
	if err != nil {
		t.Fatal(err)
	}
	// A leftover: named as a lab of a process that cannot exist (pid over
	// the kernel's limit), unique to this test process.
	stale := fmt.Sprintf("%s999999999-%d-hub", namePrefix, os.Getpid())
	if err := run("ip", "netns", "add", stale); err != nil {
		t.Fatal(err)
	}
	CleanLeftovers()
	if netnsExists(stale) {
		removeNetns(stale)
		t.Fatalf("CleanLeftovers left %s", stale)
	}
	if !netnsExists(h.Netns) || !netnsExists(lab.hub) {
		t.Fatal("CleanLeftovers removed a live lab's namespaces")
	}
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{h.Netns, lab.hub} {
		if netnsExists(ns) {
			t.Errorf("%s still exists after Close", ns)
		}
	}
}
