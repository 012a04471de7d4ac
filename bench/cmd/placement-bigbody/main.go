package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	var (
		url     = flag.String("url", "http://127.0.0.1:8778", "placementd API")
		pid     = flag.Int("pid", 0, "the server's process id, for /proc (0: not measured)")
		clients = flag.Int("clients", 8, "concurrent requests")
		mb      = flag.Int("mb", 16, "body size in MiB")
		kind    = flag.String("kind", "numbers", "numbers, schema or string")
	)
	flag.Parse()
	body := makeBody(*kind, *mb<<20)
	before := sample(*pid)
	start := time.Now()
	var wg sync.WaitGroup
	statuses := make([]string, *clients)
	for i := range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPut, *url+"/allocations/"+fmt.Sprintf("00000000-0000-0000-0000-%012d", i), bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Auth-Token", "admin")
			req.Header.Set("OpenStack-API-Version", "placement 1.28")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses[i] = "error: " + err.Error()
				return
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i] = fmt.Sprintf("%d (%d bytes)", resp.StatusCode, n)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	after := sample(*pid)
	fmt.Printf("%d × %d MiB %s bodies in %.1fs: %s\n", *clients, *mb, *kind, elapsed.Seconds(), strings.Join(dedupe(statuses), ", "))
	if *pid != 0 {
		fmt.Printf("server peak RSS %d MiB → %d MiB, CPU %.1fs\n", before.hwmKB>>10, after.hwmKB>>10, after.cpu-before.cpu)
	}
}

// makeBody builds an invalid body of about size bytes.
func makeBody(kind string, size int) []byte {
	var b bytes.Buffer
	switch kind {
	case "numbers", "schema":
		b.WriteString(`{"allocations": [`)
		for b.Len() < size-4 {
			b.WriteString("1,")
		}
		b.WriteString("1")
		if kind == "schema" {
			b.WriteString("]}")
		}
	case "string":
		b.WriteString(`{"allocations": "`)
		b.Write(bytes.Repeat([]byte("x"), size-b.Len()))
	default:
		log.Fatalf("-kind %q: want numbers, schema or string", kind)
	}
	return b.Bytes()
}

type procSample struct {
	hwmKB int64
	cpu   float64 // seconds of user and system time
}

func sample(pid int) procSample {
	if pid == 0 {
		return procSample{}
	}
	var s procSample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			s.hwmKB, _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		log.Fatal(err)
	}
	// Fields after the command name (which may hold spaces): utime and
	// stime are the 12th and 13th.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	s.cpu = (ut + st) / 100 // clock ticks; 100 per second on Linux
	return s
}

func dedupe(list []string) []string {
	seen := map[string]int{}
	var out []string
	for _, s := range list {
		if seen[s] == 0 {
			out = append(out, s)
		}
		seen[s]++
	}
	for i, s := range out {
		out[i] = fmt.Sprintf("%d× %s", seen[s], s)
	}
	return out
}
