package testcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/placementd/placementd/cluster/front"
)

// Build compiles cmd/placementd (statically, with the given build tags)
// into dir and returns the binary's path.
func Build(dir string, tags ...string) (string, error) {
	bin := filepath.Join(dir, "placementd")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, "github.com/placementd/placementd/cmd/placementd")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
}

// FreeAddr returns host:port with a port free at the moment on ip, never
// a port it returned before in this process (on any address): clusters of
// tests running in parallel pick their ports on the same addresses, and
// the kernel may hand a port just released by one to the other before the
// first binds it. The port is free on ip only: one to be bound on the
// wildcard address (0.0.0.0) must be asked for there, where it is free on
// every address (other test processes hold ports on 127.0.0.x and lab
// addresses).
func FreeAddr(ip string) (string, error) {
	for try := 0; ; try++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return "", err
		}
		addr := ln.Addr().String()
		ln.Close()
		_, port, _ := net.SplitHostPort(addr)
		if _, given := handedOut.LoadOrStore(port, true); !given || try == 100 {
			return addr, nil
		}
	}
}

// handedOut holds the ports FreeAddr returned.
var handedOut sync.Map

// Proc is one placementd process; the fields are its flags. A node keeps
// its addresses and data dir across restarts.
type Proc struct {
	ID       string
	Bin      string
	HTTPAddr string
	RaftAddr string
	// RaftAdvertise is the Raft address other nodes dial ("" for
	// RaftAddr), e.g. a proxy in front of the node.
	RaftAdvertise string
	DataDir       string
	Secret        string
	// Args are extra flags for `placementd serve`.
	Args []string
	// LogPath collects the output of every run of the node.
	LogPath string
	// Exec, when set, is a command prefix the binary runs under, e.g. the
	// WAN lab's `ip netns exec NS` (it must exec the binary, so that the
	// signals below reach placementd itself).
	Exec []string
	// HTTP, when set, is the client the node's API is reached with (one
	// that dials into the node's namespace).
	HTTP *http.Client

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	stopping bool     // the exit under way was asked for
	crashes  []string // exits nobody asked for
	lastExit error    // how the last run ended (nil: exit status 0)
	paused   bool
}

// Start runs the node; with join it joins the cluster through those API
// addresses, without it a fresh data dir starts a new cluster.
func (n *Proc) Start(join []string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("%s is running", n.ID)
	}
	args := []string{"serve", "--node-id", n.ID, "--http-addr", n.HTTPAddr, "--raft-addr", n.RaftAddr,
		"--data-dir", n.DataDir, "--log-level", "warn"}
	if n.RaftAdvertise != "" {
		args = append(args, "--raft-advertise", n.RaftAdvertise)
	}
	if !loopbackAddr(n.HTTPAddr) {
		// Test nodes in network namespaces (10.x addresses) run the
		// default noauth2, which refuses other than loopback addresses
		// without this flag.
		args = append(args, "--auth-noauth2-insecure-remote")
	}
	if n.Secret != "" {
		args = append(args, "--cluster-secret", n.Secret)
	}
	if len(join) > 0 {
		args = append(args, "--join", strings.Join(join, ","))
	}
	args = append(args, n.Args...)
	log, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "=== %s start %s %s\n", time.Now().Format(time.RFC3339Nano), n.ID, strings.Join(args, " "))
	argv := append(append(append([]string{}, n.Exec...), n.Bin), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	exited := make(chan struct{})
	n.cmd, n.exited, n.stopping, n.paused = cmd, exited, false, false
	go func() {
		err := cmd.Wait()
		log.Close()
		n.mu.Lock()
		n.lastExit = err
		if !n.stopping {
			n.crashes = append(n.crashes, fmt.Sprintf("%s exited by itself at %s: %v",
				n.ID, time.Now().Format("15:04:05.000"), err))
		}
		if n.cmd == cmd {
			n.cmd = nil
		}
		n.mu.Unlock()
		close(exited)
	}()
	return nil
}

// signal sends sig to the running process; stop marks the exit that may
// follow as asked for.
func (n *Proc) signal(sig syscall.Signal, stop bool) (chan struct{}, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return nil, fmt.Errorf("%s is not running", n.ID)
	}
	if stop {
		n.stopping = true
	}
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
	return n.exited, n.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL and waits for the process to go.
func (n *Proc) Kill() error {
	exited, err := n.signal(syscall.SIGKILL, true)
	if err != nil {
		return err
	}
	<-exited
	return nil
}

// Stop sends SIGTERM (a graceful stop) and waits up to timeout, then
// kills the process.
func (n *Proc) Stop(timeout time.Duration) error {
	if n.Paused() {
		n.Resume()
	}
	exited, err := n.signal(syscall.SIGTERM, true)
	if err != nil {
		return err
	}
	select {
	case <-exited:
		return nil
	case <-time.After(timeout):
		n.Kill()
		return fmt.Errorf("%s did not stop within %s after SIGTERM", n.ID, timeout)
	}
}

// Pause freezes the process (SIGSTOP).
func (n *Proc) Pause() error { _, err := n.signal(syscall.SIGSTOP, false); return err }

// Resume continues a paused process (SIGCONT).
func (n *Proc) Resume() error { _, err := n.signal(syscall.SIGCONT, false); return err }

// Running reports whether the process is up (paused or not).
func (n *Proc) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// Paused reports whether the process is stopped by SIGSTOP.
func (n *Proc) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil && n.paused
}

// Wipe deletes the node's data dir; the node must not be running.
func (n *Proc) Wipe() error {
	if n.Running() {
		return fmt.Errorf("%s is running", n.ID)
	}
	return os.RemoveAll(n.DataDir)
}

// Exited is nil while the node runs; after it exited, an error with how
// its last run ended and the end of its log, for a wait to give up on a
// node that will never answer (return it through Abort).
func (n *Proc) Exited() error {
	if n.Running() {
		return nil
	}
	return fmt.Errorf("%s is not running (last exit: %v); its log ends:\n%s", n.ID, n.LastExit(), n.LogTail(2000))
}

// Crashes lists the exits of the node nobody asked for.
func (n *Proc) Crashes() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.crashes...)
}

// LastExit is how the node's last run ended: nil for exit status 0 (or
// still running), else the wait error (e.g. "exit status 1").
func (n *Proc) LastExit() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lastExit
}

// Client is the operator API client of the node.
func (n *Proc) Client() *front.Client {
	return &front.Client{Addr: n.HTTPAddr, Secret: n.Secret, HTTP: n.HTTP}
}

// LogTail returns the last max bytes of the node's log.
func (n *Proc) LogTail(max int) string {
	b, _ := os.ReadFile(n.LogPath)
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// Procs is a set of placementd processes seen through their operator
// API. Its waits take a context and return errors, for code that cannot
// fail a test itself (the fault harness, benchmark commands); ProcCluster
// has the same verbs for tests.
type Procs []*Proc

// Status asks the running nodes, in turn, for the cluster status until
// one that knows a leader answers.
func (ps Procs) Status(ctx context.Context) (front.ClusterStatus, error) {
	var st front.ClusterStatus
	err := Poll(ctx, func() error {
		last := errors.New("no node running")
		for _, n := range ps {
			if !n.Running() || n.Paused() {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			s, err := n.Client().Status(cctx)
			cancel()
			if err == nil && s.Leader != "" {
				st = s
				return nil
			}
			if err == nil {
				err = fmt.Errorf("%s knows no leader", n.ID)
			}
			last = err
		}
		return last
	})
	if err != nil {
		return front.ClusterStatus{}, fmt.Errorf("no leader: %v", err)
	}
	return st, nil
}

// WaitHealthy waits until the cluster reports want healthy members.
func (ps Procs) WaitHealthy(ctx context.Context, want int) (front.ClusterStatus, error) {
	var last front.ClusterStatus
	err := Poll(ctx, func() error {
		st, err := ps.Status(ctx)
		if err != nil {
			return err
		}
		last = st
		healthy := 0
		for _, m := range st.Members {
			if m.Healthy {
				healthy++
			}
		}
		return Check(healthy == want && len(st.Members) == want,
			"%d members, want %d healthy: %s", len(st.Members), want, summarize(st))
	})
	if err != nil {
		return last, fmt.Errorf("cluster not healthy: %v", err)
	}
	return last, nil
}

func summarize(st front.ClusterStatus) string {
	var parts []string
	for _, m := range st.Members {
		s := fmt.Sprintf("%s healthy=%v", m.ID, m.Healthy)
		if m.Error != "" {
			s += " (" + m.Error + ")"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("leader %s term %d: %s", st.Leader, st.Term, strings.Join(parts, ", "))
}

// Leader waits until the running nodes name a leader and returns it (an
// error if it is none of them).
func (ps Procs) Leader(ctx context.Context) (*Proc, error) {
	st, err := ps.Status(ctx)
	if err != nil {
		return nil, err
	}
	if n := ps.Named(st.Leader); n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("the leader %s is none of the nodes", st.Leader)
}

// Named returns the node named id (nil if none).
func (ps Procs) Named(id string) *Proc {
	for _, n := range ps {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// Except returns the nodes other than n.
func (ps Procs) Except(n *Proc) Procs {
	var out Procs
	for _, o := range ps {
		if o != n {
			out = append(out, o)
		}
	}
	return out
}

// Converged waits until every node (each must be running) reports the
// same digest at the same state index, and returns it as digest@index.
func (ps Procs) Converged(ctx context.Context) (string, error) {
	var state string
	err := Poll(ctx, func() error {
		seen := map[string]bool{}
		var each []string
		for _, n := range ps {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			st, err := n.Client().Self(cctx)
			cancel()
			key := fmt.Sprintf("%s@%d", st.Digest, st.StateIndex)
			if err != nil {
				key = "unreachable"
			}
			seen[key] = true
			each = append(each, n.ID+"="+key)
			state = key
		}
		if len(seen) != 1 || seen["unreachable"] {
			return fmt.Errorf("nodes differ: %s", strings.Join(each, ", "))
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("not converged: %w", err)
	}
	return state, nil
}

// Pid is the running process's id (0 when the node is not running), for
// reading its /proc entries.
func (n *Proc) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// loopbackAddr reports whether host:port has a loopback IP.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}
