package difftest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Request is one step of a sequence as the generator wrote it. Path and
// Body may hold placeholders that each target fills in with its own
// values (see resolve):
//
//	{{gen:N}}      the uuid the target generated for the provider that
//	               step N created without naming one
//	{{rpgen:REF}}  the current generation of provider REF (a uuid or a
//	               {{gen:N}} reference written without braces: gen:N)
//	{{cgen:UUID}}  the current generation of consumer UUID, or null
type Request struct {
	Method string
	Path   string // with the query string
	// Headers in order; a header may repeat.
	Headers [][2]string
	Body    []byte
	// Creates names the generated-uuid reference ("gen:N") this step's
	// provider gets when the target creates it.
	Creates string
	// Note says what the generator meant (a mutation, a malformed body).
	Note string
}

// String shows the request as a reproduction lists it.
func (r *Request) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Method, r.Path)
	for _, h := range r.Headers {
		fmt.Fprintf(&b, "\n    %s: %s", h[0], h[1])
	}
	if r.Body != nil {
		fmt.Fprintf(&b, "\n    body: %s", truncate(string(r.Body), 2000))
	}
	if r.Note != "" {
		fmt.Fprintf(&b, "\n    (%s)", r.Note)
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}

// Response is what a target answered.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// send writes req to addr as a raw HTTP/1.1 request (so that headers go
// out exactly as given: repeated, odd or missing) on a connection of its
// own, and reads the answer.
func send(addr, method, path string, headers [][2]string, body []byte) (*Response, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, addr)
	hasLength := false
	for _, h := range headers {
		if strings.EqualFold(h[0], "Content-Length") {
			hasLength = true
		}
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	if body != nil && !hasLength {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("Connection: close\r\n\r\n")
	b.Write(body)
	if _, err := conn.Write(b.Bytes()); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

// session is one target's side of a run: the uuids it generated and how
// to reach it.
type session struct {
	target *Target
	// generated maps a "gen:N" reference to the uuid this target made.
	generated map[string]string
	// named holds every uuid the requests so far named (lower case):
	// any other uuid in an answer is one the target made up.
	named map[string]bool
	// newerTraits are the standard traits only this target knows.
	newerTraits map[string]bool
	// leaks counts the records forgetLeaks removed.
	leaks int
}

var placeholderRE = regexp.MustCompile(`\{\{(gen|rpgen|cgen):([^}]*)\}\}`)

// missingUUID stands for a generated uuid whose creating step was shrunk
// away or failed: the same on both targets, and no provider's.
const missingUUID = "00000000-0000-4000-8000-00000000dead"

// resolve fills in the placeholders of s for this target; the
// generation placeholders cost a read of the target.
func (se *session) resolve(s string) (string, error) {
	var err error
	out := placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		p := placeholderRE.FindStringSubmatch(m)
		switch p[1] {
		case "gen":
			return se.uuidOf("gen:" + p[2])
		case "rpgen":
			g, e := se.providerGeneration(se.uuidOf(p[2]))
			if e != nil {
				err = e
			}
			return g
		default:
			g, e := se.consumerGeneration(p[2])
			if e != nil {
				err = e
			}
			return g
		}
	})
	return out, err
}

// uuidOf turns a reference (a uuid, or gen:N) into this target's uuid.
func (se *session) uuidOf(ref string) string {
	if !strings.HasPrefix(ref, "gen:") {
		return ref
	}
	if u, ok := se.generated[ref]; ok {
		return u
	}
	return missingUUID
}

var adminRead = [][2]string{{"X-Auth-Token", "admin"}, {"OpenStack-API-Version", "placement 1.39"}}

// providerGeneration reads a provider's generation ("0" if it does not
// exist, which keeps the request well formed).
func (se *session) providerGeneration(uuid string) (string, error) {
	resp, err := send(se.target.Addr, "GET", "/resource_providers/"+uuid, adminRead, nil)
	if err != nil {
		return "", err
	}
	var rp struct{ Generation json.Number }
	if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &rp) != nil || rp.Generation == "" {
		return "0", nil
	}
	return rp.Generation.String(), nil
}

// consumerGeneration reads a consumer's generation ("null" if it has no
// allocations).
func (se *session) consumerGeneration(uuid string) (string, error) {
	resp, err := send(se.target.Addr, "GET", "/allocations/"+uuid, adminRead, nil)
	if err != nil {
		return "", err
	}
	var c struct {
		ConsumerGeneration *json.Number `json:"consumer_generation"`
	}
	if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &c) != nil || c.ConsumerGeneration == nil {
		return "null", nil
	}
	return c.ConsumerGeneration.String(), nil
}

// upstreamState is what /__difftest/state of upstream.py lists.
type upstreamState struct {
	Consumers     []string `json:"consumers"`
	ConsumerTypes []string `json:"consumer_types"`
}

func (se *session) upstreamState() (*upstreamState, error) {
	resp, err := send(se.target.Addr, "GET", "/__difftest/state", nil, nil)
	if err != nil {
		return nil, err
	}
	var st upstreamState
	if err := json.Unmarshal(resp.Body, &st); err != nil {
		return nil, fmt.Errorf("upstream state: %v: %s", err, resp.Body)
	}
	return &st, nil
}

// isAllocationWrite reports whether req may create consumers.
func isAllocationWrite(req *Request) bool {
	route := routeOf(req.Path)
	return req.Method == "PUT" && route == "/allocations/{consumer_uuid}" ||
		req.Method == "POST" && (route == "/allocations" || route == "/reshaper")
}

// forgetLeaks undoes what upstream keeps of an allocation write it
// refused: the consumers and consumer types it created before a later
// check failed (placementd changes nothing on a refused request). It
// returns how many it removed.
func (se *session) forgetLeaks(before *upstreamState) (int, error) {
	after, err := se.upstreamState()
	if err != nil {
		return 0, err
	}
	q := url.Values{}
	for _, c := range newNames(before.Consumers, after.Consumers) {
		q.Add("consumer", c)
	}
	for _, t := range newNames(before.ConsumerTypes, after.ConsumerTypes) {
		q.Add("type", t)
	}
	if len(q) == 0 {
		return 0, nil
	}
	resp, err := send(se.target.Addr, "POST", "/__difftest/forget?"+q.Encode(), nil, nil)
	if err != nil {
		return 0, err
	}
	var out struct{ Deleted int }
	json.Unmarshal(resp.Body, &out)
	return out.Deleted, nil
}

func newNames(before, after []string) []string {
	had := map[string]bool{}
	for _, n := range before {
		had[n] = true
	}
	var out []string
	for _, n := range after {
		if !had[n] {
			out = append(out, n)
		}
	}
	return out
}

// do sends one step to the target: placeholders filled in, then the
// uuid of a provider the step creates learned from the answer.
func (se *session) do(req *Request) (*Response, error) {
	path, err := se.resolve(req.Path)
	if err != nil {
		return nil, err
	}
	var body []byte
	if req.Body != nil {
		b, err := se.resolve(string(req.Body))
		if err != nil {
			return nil, err
		}
		body = []byte(b)
	}
	for _, u := range uuidRE.FindAllString(path+string(body), -1) {
		se.named[strings.ToLower(u)] = true
	}
	var before *upstreamState
	if se.target.Name == "upstream" && isAllocationWrite(req) {
		if before, err = se.upstreamState(); err != nil {
			return nil, err
		}
	}
	resp, err := send(se.target.Addr, req.Method, path, req.Headers, body)
	if err != nil {
		return nil, err
	}
	if before != nil && resp.Status >= 400 {
		n, err := se.forgetLeaks(before)
		if err != nil {
			return nil, err
		}
		se.leaks += n
	}
	if req.Creates != "" && (resp.Status == http.StatusCreated || resp.Status == http.StatusOK) {
		if loc := resp.Header.Get("Location"); loc != "" {
			se.generated[req.Creates] = loc[strings.LastIndexByte(loc, '/')+1:]
		} else {
			var rp struct{ UUID string }
			if json.Unmarshal(resp.Body, &rp) == nil && rp.UUID != "" {
				se.generated[req.Creates] = rp.UUID
			}
		}
	}
	return resp, nil
}
