package wanlab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrUnavailable: the lab cannot run on this machine (not root, a tool or
// a kernel feature missing); the error wrapping it says which.
var ErrUnavailable = errors.New("WAN lab unavailable")

const (
	// namePrefix starts every namespace a lab creates.
	namePrefix = "pwl"
	queueNum   = 0
	maxHosts   = 250
)

var labSeq atomic.Int64

// Lab is one running lab.
type Lab struct {
	id  string // pwl<pid>-<n>
	hub string // the hub's namespace

	mu      sync.Mutex
	hosts   []*Host
	links   map[[2]string]Link // by host names, from -> to
	delayer *exec.Cmd
	ctrl    *bufio.Writer
	ctrlIn  interface{ Close() error }
	replies *bufio.Scanner
	stderr  *bytes.Buffer
	closed  bool
}

// Host is one namespace of the lab with one address.
type Host struct {
	Name  string
	Netns string     // its namespace's name (ip netns)
	Addr  netip.Addr // its only address besides loopback
}

// BuildDelayer compiles the wan-delayer command into dir and returns its
// path.
func BuildDelayer(dir string) (string, error) {
	bin := filepath.Join(dir, "wan-delayer")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/placementd/placementd/internal/wanlab/cmd/wan-delayer")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building wan-delayer: %v\n%s", err, out)
	}
	return bin, nil
}

// New creates the hub, its NFQUEUE rule and starts the delayer (the
// wan-delayer binary at delayerBin); hosts are added with AddHost.
func New(delayerBin string) (*Lab, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: network namespaces and iptables need root", ErrUnavailable)
	}
	for _, tool := range []string{"ip", "iptables", "sysctl"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%w: %s is not installed", ErrUnavailable, tool)
		}
	}
	CleanLeftovers()
	id := fmt.Sprintf("%s%d-%d", namePrefix, os.Getpid(), labSeq.Add(1))
	l := &Lab{id: id, hub: id + "-hub", links: map[[2]string]Link{}}
	steps := [][]string{
		{"ip", "netns", "add", l.hub},
		{"ip", "-n", l.hub, "link", "set", "lo", "up"},
		{"ip", "netns", "exec", l.hub, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
		// No --queue-bypass: without the delayer nothing passes, so a lab
		// whose delayer died cannot pass for one without delay.
		{"ip", "netns", "exec", l.hub, "iptables", "-w", "-A", "FORWARD", "-j", "NFQUEUE", "--queue-num", strconv.Itoa(queueNum)},
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			l.Close()
			return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	if err := l.startDelayer(delayerBin); err != nil {
		l.Close()
		return nil, fmt.Errorf("%w: the NFQUEUE delayer: %v", ErrUnavailable, err)
	}
	return l, nil
}

func (l *Lab) startDelayer(bin string) error {
	// Niced so that its timers stay on time on a busy machine: every
	// packet of the lab waits on them. Its threads inherit the niceness.
	cmd := exec.Command("ip", "netns", "exec", l.hub, "nice", "-n", "-10", bin, "--queue", strconv.Itoa(queueNum))
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	l.stderr = &bytes.Buffer{}
	cmd.Stderr = l.stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	l.delayer, l.ctrlIn, l.ctrl = cmd, in, bufio.NewWriter(in)
	l.replies = bufio.NewScanner(out)
	// The first answer comes once the queue is bound.
	_, err = l.request(delayerRequest{Op: "stats"})
	return err
}

// request sends one control request and reads its answer; l.mu is held
// or the lab is not shared yet.
func (l *Lab) request(req delayerRequest) (delayerReply, error) {
	b, _ := json.Marshal(req)
	l.ctrl.Write(append(b, '\n'))
	if err := l.ctrl.Flush(); err != nil {
		return delayerReply{}, fmt.Errorf("delayer: %v %s", err, strings.TrimSpace(l.stderr.String()))
	}
	if !l.replies.Scan() {
		return delayerReply{}, fmt.Errorf("delayer exited: %s", strings.TrimSpace(l.stderr.String()))
	}
	var reply delayerReply
	if err := json.Unmarshal(l.replies.Bytes(), &reply); err != nil {
		return reply, err
	}
	if !reply.OK {
		return reply, errors.New("delayer: " + reply.Error)
	}
	return reply, nil
}

// AddHost creates a namespace named after name with its link to the hub.
// Its links to the other hosts start without delay.
func (l *Lab) AddHost(name string) (*Host, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("wanlab: lab closed")
	}
	if len(l.hosts) >= maxHosts {
		return nil, errors.New("wanlab: too many hosts")
	}
	if name == "" || strings.ContainsAny(name, " /") || l.host(name) != nil || name == "hub" {
		return nil, fmt.Errorf("wanlab: bad or duplicate host name %q", name)
	}
	i := len(l.hosts) + 1
	h := &Host{Name: name, Netns: l.id + "-" + name, Addr: netip.AddrFrom4([4]byte{198, 18, byte(i), 2})}
	hubSide, hubAddr := "h"+strconv.Itoa(i), fmt.Sprintf("198.18.%d.1", i)
	steps := [][]string{
		{"ip", "netns", "add", h.Netns},
		{"ip", "-n", h.Netns, "link", "set", "lo", "up"},
		{"ip", "link", "add", "eth0", "netns", h.Netns, "type", "veth", "peer", "name", hubSide, "netns", l.hub},
		{"ip", "-n", h.Netns, "addr", "add", h.Addr.String() + "/24", "dev", "eth0"},
		{"ip", "-n", l.hub, "addr", "add", hubAddr + "/24", "dev", hubSide},
		{"ip", "-n", h.Netns, "link", "set", "eth0", "up"},
		{"ip", "-n", l.hub, "link", "set", hubSide, "up"},
		{"ip", "-n", h.Netns, "route", "add", "default", "via", hubAddr},
	}
	l.hosts = append(l.hosts, h) // so that Close removes it even if a step fails
	for _, s := range steps {
		if err := run(s...); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Host returns the host named name, or nil.
func (l *Lab) Host(name string) *Host {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.host(name)
}

func (l *Lab) host(name string) *Host {
	for _, h := range l.hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// SetLink sets the path from one host to another (one direction); a cut
// it had stays.
func (l *Lab) SetLink(from, to string, link Link) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := [2]string{from, to}
	link.Cut = l.links[k].Cut
	l.links[k] = link
	return l.push()
}

// SetRTT gives the pair a and b the round-trip time rtt and the jitter
// jitter on it: half of each in each direction.
func (l *Lab) SetRTT(a, b string, rtt, jitter time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range [][2]string{{a, b}, {b, a}} {
		l.links[k] = Link{Delay: rtt / 2, Jitter: jitter / 2, Cut: l.links[k].Cut}
	}
	return l.push()
}

// Partition cuts every link between hosts of different groups, both ways,
// as of now; hosts in no group keep their links. Heal undoes it.
func (l *Lab) Partition(groups ...[]string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	group := map[string]int{}
	for i, g := range groups {
		for _, name := range g {
			group[name] = i + 1
		}
	}
	for _, a := range l.hosts {
		for _, b := range l.hosts {
			if ga, gb := group[a.Name], group[b.Name]; a != b && ga != 0 && gb != 0 && ga != gb {
				k := [2]string{a.Name, b.Name}
				link := l.links[k]
				link.Cut = true
				l.links[k] = link
			}
		}
	}
	return l.push()
}

// Isolate cuts the named hosts off from every other host (they still
// reach each other).
func (l *Lab) Isolate(names ...string) error {
	in := map[string]bool{}
	for _, n := range names {
		in[n] = true
	}
	var rest []string
	l.mu.Lock()
	for _, h := range l.hosts {
		if !in[h.Name] {
			rest = append(rest, h.Name)
		}
	}
	l.mu.Unlock()
	return l.Partition(names, rest)
}

// Heal restores every cut link.
func (l *Lab) Heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, link := range l.links {
		link.Cut = false
		l.links[k] = link
	}
	return l.push()
}

// push sends the whole table to the delayer; l.mu is held.
func (l *Lab) push() error {
	if l.closed {
		return errors.New("wanlab: lab closed")
	}
	var rules []linkRule
	keys := make([][2]string, 0, len(l.links))
	for k := range l.links {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+"\x00"+keys[i][1] < keys[j][0]+"\x00"+keys[j][1] })
	for _, k := range keys {
		a, b := l.host(k[0]), l.host(k[1])
		if a == nil || b == nil {
			return fmt.Errorf("wanlab: no host %q or %q", k[0], k[1])
		}
		rules = append(rules, linkRule{Src: a.Addr, Dst: b.Addr, Link: l.links[k]})
	}
	_, err := l.request(delayerRequest{Op: "set", Links: rules})
	return err
}

// Stats returns the delayer's counters.
func (l *Lab) Stats() (DelayerStats, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return DelayerStats{}, errors.New("wanlab: lab closed")
	}
	r, err := l.request(delayerRequest{Op: "stats"})
	if err != nil || r.Stats == nil {
		return DelayerStats{}, err
	}
	return *r.Stats, nil
}

// Close stops the delayer and every process left in the lab's namespaces,
// and deletes the namespaces (their links go with them).
func (l *Lab) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	hosts := l.hosts
	l.mu.Unlock()
	if l.delayer != nil {
		l.ctrlIn.Close() // the delayer exits at the end of its input
		done := make(chan struct{})
		go func() { l.delayer.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			l.delayer.Process.Kill()
			<-done
		}
	}
	var first error
	for _, ns := range append(namespaces(hosts), l.hub) {
		if err := removeNetns(ns); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func namespaces(hosts []*Host) []string {
	var out []string
	for _, h := range hosts {
		out = append(out, h.Netns)
	}
	return out
}

// removeNetns kills the processes inside ns, then deletes it.
func removeNetns(ns string) error {
	if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if !netnsExists(ns) {
		return nil
	}
	return run("ip", "netns", "del", ns)
}

func netnsExists(ns string) bool {
	_, err := os.Stat(filepath.Join("/run/netns", ns))
	return err == nil
}

// CleanLeftovers removes the namespaces (and the processes in them) of
// labs whose process is gone. New calls it; it is safe while other
// processes run labs of their own.
func CleanLeftovers() {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], namePrefix) {
			continue
		}
		ns := fields[0]
		pidText, _, ok := strings.Cut(strings.TrimPrefix(ns, namePrefix), "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		removeNetns(ns)
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Exec is the command prefix that runs a program inside h's namespace
// (ip netns exec, which execs the program: the process keeps its pid).
func (h *Host) Exec() []string { return []string{"ip", "netns", "exec", h.Netns} }

// inNetns runs fn on an OS thread switched into h's namespace. The thread
// is never switched back: it ends with the goroutine (a locked thread that
// exits is destroyed), so no other goroutine ever runs in the lab. Sockets
// fn opens stay in h's namespace whichever thread uses them later.
func (h *Host) inNetns(fn func()) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open(filepath.Join("/run/netns", h.Netns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", h.Netns, err)
			return
		}
		fn()
		errc <- nil
	}()
	return <-errc
}

// DialContext dials from inside h's namespace (a net.Dialer's DialContext).
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	var derr error
	if err := h.inNetns(func() {
		c, derr = (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext(ctx, network, addr)
	}); err != nil {
		return nil, err
	}
	return c, derr
}

// Listen listens inside h's namespace.
func (h *Host) Listen(network, addr string) (net.Listener, error) {
	var ln net.Listener
	var lerr error
	if err := h.inNetns(func() { ln, lerr = net.Listen(network, addr) }); err != nil {
		return nil, err
	}
	return ln, lerr
}

// HTTPClient is an HTTP client whose connections start in h's namespace.
func (h *Host) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: h.DialContext, MaxIdleConnsPerHost: 64, IdleConnTimeout: 5 * time.Minute,
	}}
}
