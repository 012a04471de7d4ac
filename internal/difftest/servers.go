package difftest

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Target is one running Placement API under test.
type Target struct {
	Name string
	Addr string // host:port
	Dir  string // its data directory (logs included)
	stop func()
}

// Stop ends the server.
func (t *Target) Stop() {
	if t.stop != nil {
		t.stop()
		t.stop = nil
	}
}

// LogTail is the end of the server's log, for a failure report.
func (t *Target) LogTail(n int) string {
	for _, name := range []string{"upstream.log", "placementd.log"} {
		b, err := os.ReadFile(filepath.Join(t.Dir, name))
		if err != nil {
			continue
		}
		if len(b) > n {
			b = b[len(b)-n:]
		}
		return string(b)
	}
	return ""
}

//go:embed upstream.py
var upstreamScript []byte

// Upstream is upstream Placement's process that forks fresh servers (see
// upstream.py): it imports Placement once, so that each fresh server (one
// per run of a request sequence, many while shrinking) starts in well
// under a second rather than ~10.
type Upstream struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	dir   string
}

// UpstreamInstalled reports whether Debian's python3-placement is there.
func UpstreamInstalled() bool {
	_, err := os.Stat("/usr/lib/python3/dist-packages/placement/wsgi.py")
	return err == nil
}

// StartUpstream starts the forking process with its work files under dir.
func StartUpstream(dir string) (*Upstream, error) {
	script := filepath.Join(dir, "upstream.py")
	if err := os.WriteFile(script, upstreamScript, 0o600); err != nil {
		return nil, err
	}
	tmpl := filepath.Join(dir, "template")
	if err := os.MkdirAll(tmpl, 0o700); err != nil {
		return nil, err
	}
	cmd := exec.Command("/usr/bin/python3", script, tmpl)
	// Its own process group (stopped as one), and killed if this process
	// dies without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "zygote.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	logf.Close()
	u := &Upstream{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout), dir: dir}
	line, err := u.readLine(90 * time.Second)
	if err != nil || line != "zygote ready" {
		u.Close()
		log, _ := os.ReadFile(filepath.Join(dir, "zygote.log"))
		tlog, _ := os.ReadFile(filepath.Join(tmpl, "upstream.log"))
		return nil, fmt.Errorf("upstream did not start (%q, %v):\n%s\n%s", line, err, tail(log), tail(tlog))
	}
	return u, nil
}

func tail(b []byte) []byte {
	if len(b) > 3000 {
		return b[len(b)-3000:]
	}
	return b
}

// readLine reads one line of the zygote's protocol within d.
func (u *Upstream) readLine(d time.Duration) (string, error) {
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := u.out.ReadString('\n')
		ch <- res{strings.TrimSpace(s), err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-time.After(d):
		// The reader goroutine ends when Close kills the process.
		return "", fmt.Errorf("no answer within %s", d)
	}
}

// New starts a fresh upstream server with its database in dir.
func (u *Upstream) New(dir string) (*Target, error) {
	if _, err := fmt.Fprintln(u.stdin, dir); err != nil {
		return nil, err
	}
	line, err := u.readLine(60 * time.Second)
	var pid, port int
	if err == nil {
		_, err = fmt.Sscanf(line, "ready %d %d", &pid, &port)
	}
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "upstream.log"))
		return nil, fmt.Errorf("upstream server did not start (%q: %v):\n%s", line, err, tail(log))
	}
	t := &Target{Name: "upstream", Addr: "127.0.0.1:" + strconv.Itoa(port), Dir: dir}
	t.stop = func() {
		// The server is the zygote's child, started by this process.
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := waitReady(t.Addr, 60*time.Second); err != nil {
		t.Stop()
		return nil, fmt.Errorf("upstream: %v:\n%s", err, t.LogTail(3000))
	}
	return t, nil
}

// Close stops the zygote and every server it forked (they die with it).
func (u *Upstream) Close() {
	u.stdin.Close()
	syscall.Kill(-u.cmd.Process.Pid, syscall.SIGKILL)
	u.cmd.Wait()
}

// StartPlacementd runs a fresh single-node placementd from bin with its
// data in dir, configured as upstream.py configures upstream (noauth2,
// default policy, no new defaults, no scope checks, no CORS).
func StartPlacementd(bin, dir string) (*Target, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	logf, err := os.Create(filepath.Join(dir, "placementd.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--node-id", "difftest", "--http-addr", addr, "--raft-addr", "127.0.0.1:0",
		"--data-dir", filepath.Join(dir, "data"), "--policy-enforce-new-defaults=false",
		"--policy-enforce-scope=false", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group (stopped as one), and killed if this process
	// dies without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	t := &Target{Name: "placementd", Addr: addr, Dir: dir}
	t.stop = func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		logf.Close()
	}
	if err := waitReady(addr, 30*time.Second); err != nil {
		t.Stop()
		return nil, fmt.Errorf("placementd: %v:\n%s", err, t.LogTail(3000))
	}
	return t, nil
}

// waitReady polls GET / until it answers 200.
func waitReady(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	c := &http.Client{Timeout: 2 * time.Second}
	for time.Now().Before(deadline) {
		if resp, err := c.Get("http://" + addr + "/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("GET / did not answer 200 within %s", d)
}
