package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// client sends Placement API requests to one endpoint as the noauth2
// admin at a fixed microversion.
type client struct {
	http     *http.Client
	base     string
	token    string
	version  string
	recorder *recorder
	// body, when set, receives every answer's body in place of a new
	// slice (the gate's clients read 500 large answers each, as ab does,
	// into one buffer); a response's body is then valid until the next
	// request.
	body *bytes.Buffer
}

// response is a request's outcome: the status (0 when the request did
// not complete) and the raw body.
type response struct {
	status int
	body   []byte
	err    error
}

// Client is the load generator's API client, for the other bench tools.
type Client = client

// Response is a request's outcome as Client.Do returns it.
type Response = response

// NewClient returns a client of base (http://host:port) that sends every
// request as token at microversion version through hc.
func NewClient(base, token, version string, hc *http.Client) *Client {
	return &client{http: hc, base: base, token: token, version: version}
}

// Do sends method path with body (JSON unless nil) and extra headers as
// name, value pairs.
func (c *client) Do(ctx context.Context, method, path string, body any, headers ...string) Response {
	return c.do(ctx, "", method, path, body, headers...)
}

// CloseIdleConnections closes the client's idle connections.
func (c *client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// Status is the answer's status, 0 when the request did not complete.
func (r response) Status() int { return r.status }

// Expect decodes an answer with status want into out (nil: discard) and
// turns any other outcome into an error.
func (r response) Expect(want int, out any) error { return r.expect(want, out) }

// do sends method path with body (marshalled to JSON unless nil) and
// records its latency under kind when a recorder is set.
func (c *client) do(ctx context.Context, kind, method, path string, body any, headers ...string) response {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return response{err: err}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return response{err: err}
	}
	req.Header.Set("X-Auth-Token", c.token)
	req.Header.Set("OpenStack-API-Version", "placement "+c.version)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	t0 := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return response{err: err}
	}
	var raw []byte
	if c.body != nil {
		c.body.Reset()
		_, err = c.body.ReadFrom(resp.Body)
		raw = c.body.Bytes()
	} else {
		raw, err = io.ReadAll(resp.Body)
	}
	resp.Body.Close()
	if c.recorder != nil && kind != "" {
		c.recorder.add(kind, time.Since(t0))
	}
	return response{status: resp.StatusCode, body: raw, err: err}
}

// expect decodes a response with status want into out (nil: discard),
// and turns any other outcome into an error.
func (r response) expect(want int, out any) error {
	if r.err != nil {
		return r.err
	}
	if r.status != want {
		return fmt.Errorf("status %d, want %d: %.300s", r.status, want, r.body)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			return fmt.Errorf("decoding %.200s: %w", r.body, err)
		}
	}
	return nil
}

// generation reads resource_provider_generation from a response body.
func (r response) generation() (int64, error) {
	var v struct {
		Generation *int64 `json:"resource_provider_generation"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil || v.Generation == nil {
		return 0, fmt.Errorf("no resource_provider_generation in %.200s", r.body)
	}
	return *v.Generation, nil
}
