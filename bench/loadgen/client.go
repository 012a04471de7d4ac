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
}

// response is a request's outcome: the status (0 when the request did
// not complete) and the raw body.
type response struct {
	status int
	body   []byte
	err    error
}

// do sends method path with body (marshalled to JSON unless nil) and
// records its latency under kind when a recorder is set.
func (c *client) do(ctx context.Context, kind, method, path string, body any) response {
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
	t0 := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		return response{err: err}
	}
	raw, err := io.ReadAll(resp.Body)
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
