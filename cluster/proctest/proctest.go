package proctest

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

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/internal/testcluster"
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

// FreeAddr returns host:port with a port free at the moment on ip.
func FreeAddr(ip string) (string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Node is one placementd process; the fields are its flags. A node keeps
// its addresses and data dir across restarts.
type Node struct {
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
func (n *Node) Start(join []string) error {
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
func (n *Node) signal(sig syscall.Signal, stop bool) (chan struct{}, error) {
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
func (n *Node) Kill() error {
	exited, err := n.signal(syscall.SIGKILL, true)
	if err != nil {
		return err
	}
	<-exited
	return nil
}

// Stop sends SIGTERM (a graceful stop) and waits up to timeout, then
// kills the process.
func (n *Node) Stop(timeout time.Duration) error {
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
func (n *Node) Pause() error { _, err := n.signal(syscall.SIGSTOP, false); return err }

// Resume continues a paused process (SIGCONT).
func (n *Node) Resume() error { _, err := n.signal(syscall.SIGCONT, false); return err }

// Running reports whether the process is up (paused or not).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// Paused reports whether the process is stopped by SIGSTOP.
func (n *Node) Paused() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil && n.paused
}

// Wipe deletes the node's data dir; the node must not be running.
func (n *Node) Wipe() error {
	if n.Running() {
		return fmt.Errorf("%s is running", n.ID)
	}
	return os.RemoveAll(n.DataDir)
}

// Crashes lists the exits of the node nobody asked for.
func (n *Node) Crashes() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.crashes...)
}

// LastExit is how the node's last run ended: nil for exit status 0 (or
// still running), else the wait error (e.g. "exit status 1").
func (n *Node) LastExit() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lastExit
}

// Client is the operator API client of the node.
func (n *Node) Client() *cluster.Client {
	return &cluster.Client{Addr: n.HTTPAddr, Secret: n.Secret, HTTP: n.HTTP}
}

// LogTail returns the last max bytes of the node's log.
func (n *Node) LogTail(max int) string {
	b, _ := os.ReadFile(n.LogPath)
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// Status asks the running nodes, in turn, for the cluster status until
// one that knows a leader answers.
func Status(ctx context.Context, nodes []*Node) (cluster.ClusterStatus, error) {
	var last error = errors.New("no node running")
	for ctx.Err() == nil {
		for _, n := range nodes {
			if !n.Running() || n.Paused() {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			st, err := n.Client().Status(cctx)
			cancel()
			if err == nil && st.Leader != "" {
				return st, nil
			}
			if err == nil {
				err = fmt.Errorf("%s knows no leader", n.ID)
			}
			last = err
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	return cluster.ClusterStatus{}, fmt.Errorf("no leader: %v", last)
}

// WaitHealthy waits until the cluster reports want healthy members.
func WaitHealthy(ctx context.Context, nodes []*Node, want int) (cluster.ClusterStatus, error) {
	var last cluster.ClusterStatus
	for {
		st, err := Status(ctx, nodes)
		if err != nil {
			return last, fmt.Errorf("cluster not healthy: %v (last status %+v)", err, last)
		}
		last = st
		healthy := 0
		for _, m := range st.Members {
			if m.Healthy {
				healthy++
			}
		}
		if healthy == want && len(st.Members) == want {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("cluster not healthy: %d members, want %d healthy: %+v", len(st.Members), want, summarize(st))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func summarize(st cluster.ClusterStatus) string {
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

// Pid is the running process's id (0 when the node is not running), for
// reading its /proc entries.
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Leader waits until the running nodes name a leader and returns it (an
// error if it is none of nodes).
func Leader(ctx context.Context, nodes []*Node) (*Node, error) {
	st, err := Status(ctx, nodes)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if n.ID == st.Leader {
			return n, nil
		}
	}
	return nil, fmt.Errorf("the leader %s is none of the nodes", st.Leader)
}

// Converged waits until every node of nodes (each must be running) reports
// the same digest at the same state index, and returns it as digest@index.
func Converged(ctx context.Context, nodes []*Node) (string, error) {
	var state string
	err := testcluster.Poll(ctx, func() error {
		seen := map[string]bool{}
		var each []string
		for _, n := range nodes {
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

// loopbackAddr reports whether host:port has a loopback IP.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}
