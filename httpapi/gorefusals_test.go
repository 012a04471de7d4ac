package httpapi

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// The answers Go's server writes itself, before any handler, come in
// Placement's error format with a request id, behind FixContentLength as
// placementd serves: 431 for headers past the bound, 400 for a request
// line or header name it cannot read, 501 for an unknown
// Transfer-Encoding. Before, they were Go's plain text.
func TestGoRefusalsInPlacementFormat(t *testing.T) {
	api := newTestAPI(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: New(api.Node, Config{}), MaxHeaderBytes: 4 << 10}
	go srv.Serve(FixContentLength(ln))
	t.Cleanup(func() { srv.Close() })

	for name, c := range map[string]struct {
		raw    string
		status int
		detail string
	}{
		"huge header":      {"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 16<<10) + "\r\n\r\n", 431, "The request's headers are too large."},
		"bad header name":  {"GET / HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", 400, "invalid header name"},
		"bad request line": {"NOT A REQUEST LINE\r\n\r\n", 400, "The request line or a header could not be read."},
		"no host":          {"GET / HTTP/1.1\r\n\r\n", 400, "missing required Host header"},
		"transfer coding":  {"POST /resource_providers HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "Unsupported transfer encoding"},
	} {
		resps := exchangeRaw(t, ln.Addr().String(), c.raw)
		if len(resps) != 1 {
			t.Errorf("%s: %d answers", name, len(resps))
			continue
		}
		r := resps[0]
		b, _ := io.ReadAll(r.Body)
		var body struct {
			Errors []errorItem `json:"errors"`
		}
		if r.StatusCode != c.status || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &body) != nil || len(body.Errors) != 1 {
			t.Errorf("%s: %d %q %s", name, r.StatusCode, r.Header.Get("Content-Type"), b)
			continue
		}
		e := body.Errors[0]
		if e.Status != c.status || e.Title != http.StatusText(c.status) || !strings.Contains(e.Detail, c.detail) ||
			!reqIDRE.MatchString(e.RequestID) || r.Header.Get(requestIDHeader) != e.RequestID {
			t.Errorf("%s: %+v (header id %q)", name, e, r.Header.Get(requestIDHeader))
		}
	}
}
