package testcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// DefaultVersion is the microversion Do asks for unless told otherwise.
const DefaultVersion = "placement 1.39"

// Response is an answer read in full.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as a JSON object.
func (r Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("body is not a JSON object: %q", r.Body)
	}
	return v
}

// Do sends a Placement request to base (http://host:port) as admin at
// DefaultVersion, with body marshalled to JSON (nil for none; an
// io.Reader is sent as it is, chunked when its length is unknown, still
// as JSON). headers are
// name, value pairs set last: they override the defaults, and an empty
// value removes the header (e.g. "OpenStack-API-Version", "" for none).
func Do(t testing.TB, base, method, path string, body any, headers ...string) Response {
	t.Helper()
	r, err := Send(http.DefaultClient, base, method, path, body, headers...)
	if err != nil {
		t.Fatalf("%s %s at %s: %v", method, path, base, err)
	}
	return r
}

// Send is Do for callers that handle the error themselves (goroutines,
// clients under fault injection).
func Send(hc *http.Client, base, method, path string, body any, headers ...string) (Response, error) {
	return SendContext(context.Background(), hc, base, method, path, body, headers...)
}

// SendContext is Send bounded by ctx (a load loop's per-request deadline).
func SendContext(ctx context.Context, hc *http.Client, base, method, path string, body any, headers ...string) (Response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case io.Reader:
		rd = b
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return Response{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return Response{}, err
	}
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", DefaultVersion)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}, err
}

// Serve runs h on a loopback HTTP server closed when the test ends.
func Serve(t testing.TB, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
