package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	var (
		api      = flag.String("url", "http://127.0.0.1:8778", "placementd API")
		pid      = flag.Int("pid", 0, "the server's process id, for /proc (0: not measured)")
		clients  = flag.Int("clients", 100, "connections that never read their answer")
		trees    = flag.Int("trees", 100, "provider trees to create first (0: use what is there)")
		children = flag.Int("children", 10, "VCPU children per tree")
		groups   = flag.Int("groups", 6, "VCPU:1 request groups (group_policy none): each adds an allocation and a mapping to every candidate")
		hold     = flag.Duration("hold", 20*time.Second, "how long the clients hold their connections (the server's write timeout cuts them before, by default 30 s)")
	)
	flag.Parse()
	query := "/allocation_candidates?group_policy=none"
	for g := 1; g <= *groups; g++ {
		query += fmt.Sprintf("&resources%d=VCPU:1", g)
	}
	u, err := url.Parse(*api)
	if err != nil {
		log.Fatal(err)
	}
	for i := range *trees {
		root := uuidOf(i, 0)
		create(*api, root, "")
		for c := 1; c <= *children; c++ {
			create(*api, uuidOf(i, c), root)
		}
	}
	before := sample(*pid)
	start := time.Now()
	conns := make([]net.Conn, 0, *clients)
	for range *clients {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			log.Fatalf("dial: %v", err)
		}
		c.(*net.TCPConn).SetReadBuffer(4 << 10)
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\nOpenStack-API-Version: placement 1.39\r\n\r\n", query)
		conns = append(conns, c)
	}
	var peakKB int64
	for time.Since(start) < *hold {
		if s := sample(*pid); s.rssKB > peakKB {
			peakKB = s.rssKB
		}
		time.Sleep(50 * time.Millisecond)
	}
	// What each client got: the status line, if the server wrote one.
	statuses := map[string]int{}
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			line = "nothing read"
		}
		statuses[strings.TrimSpace(line)]++
		c.Close()
	}
	t := time.Now()
	st := get(*api, query)
	after := sample(*pid)
	fmt.Printf("%d clients not reading for %s: %v\n", *clients, *hold, statuses)
	fmt.Printf("then a reading client: %d in %.0f ms\n", st, time.Since(t).Seconds()*1000)
	if *pid != 0 {
		fmt.Printf("server RSS %d MiB before, peak %d MiB sampled (VmHWM %d MiB), %d MiB after; CPU %.1fs\n",
			before.rssKB>>10, peakKB>>10, after.hwmKB>>10, after.rssKB>>10, after.cpu-before.cpu)
	}
}

func uuidOf(tree, child int) string { return fmt.Sprintf("00000000-0000-0000-%04d-%012d", child, tree) }

func do(method, url string, body string) int {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 && resp.StatusCode != 409 {
		log.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, bytes.TrimSpace(b))
	}
	return resp.StatusCode
}

func get(api, path string) int { return do(http.MethodGet, api+path, "") }

// create makes a provider with 64 VCPU (a child when parent is set).
func create(api, id, parent string) {
	p := ""
	if parent != "" {
		p = fmt.Sprintf(`, "parent_provider_uuid": %q`, parent)
	}
	if do(http.MethodPost, api+"/resource_providers", fmt.Sprintf(`{"name": %q, "uuid": %q%s}`, id, id, p)) == 409 {
		return // there from an earlier run
	}
	do(http.MethodPut, api+"/resource_providers/"+id+"/inventories",
		`{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 64}}}`)
}

type procSample struct {
	rssKB, hwmKB int64
	cpu          float64
}

// sample reads the process's RSS, peak RSS and CPU seconds.
func sample(pid int) procSample {
	var s procSample
	if pid == 0 {
		return s
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(status), "\n") {
		for key, dst := range map[string]*int64{"VmRSS:": &s.rssKB, "VmHWM:": &s.hwmKB} {
			if v, ok := strings.CutPrefix(line, key); ok {
				*dst, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			}
		}
	}
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// Fields after the command name (which may hold spaces): utime and
	// stime are the 12th and 13th.
	if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 12 {
		utime, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		s.cpu = (utime + stime) / 100
	}
	return s
}
