package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Endpoint is a Placement API to read.
type Endpoint struct {
	// URL is the API's root, as in the Keystone catalog
	// (http://host:8778 or http://host/placement).
	URL string
	// Token is sent as X-Auth-Token: a Keystone token with the admin
	// role, or "admin" for a service running with noauth2.
	Token string
	// HTTP is the client to use (default: one with a 60 s timeout).
	HTTP *http.Client
}

var defaultClient = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}

// Response is one answer of the API.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Get sends GET path (with its query) at the microversion ("" for none).
// Network errors are retried twice: every request here is a read.
func (e *Endpoint) Get(ctx context.Context, path, version string) (*Response, error) {
	hc := e.HTTP
	if hc == nil {
		hc = defaultClient
	}
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(e.URL, "/")+path, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		if e.Token != "" {
			req.Header.Set("X-Auth-Token", e.Token)
		}
		if version != "" {
			req.Header.Set("OpenStack-API-Version", "placement "+version)
		}
		resp, err := hc.Do(req)
		if err != nil {
			last = err
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			last = err
			continue
		}
		return &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
	}
	return nil, fmt.Errorf("GET %s%s: %w", e.URL, path, last)
}

// getJSON gets path and decodes a 200 answer into dst.
func (e *Endpoint) getJSON(ctx context.Context, path, version string, dst any) error {
	resp, err := e.Get(ctx, path, version)
	if err != nil {
		return err
	}
	if resp.Status != http.StatusOK {
		return &StatusError{Path: path, Status: resp.Status, Body: strings.TrimSpace(string(resp.Body))}
	}
	if err := json.Unmarshal(resp.Body, dst); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// StatusError is an answer other than 200 OK.
type StatusError struct {
	Path   string
	Status int
	Body   string
}

func (e *StatusError) Error() string {
	body := e.Body
	if len(body) > 300 {
		body = body[:300] + "..."
	}
	return fmt.Sprintf("GET %s: %d %s", e.Path, e.Status, body)
}

// MaxVersion is the newest microversion the endpoint serves, as "1.N".
func (e *Endpoint) MaxVersion(ctx context.Context) (string, error) {
	var root struct {
		Versions []struct {
			MaxVersion string `json:"max_version"`
		} `json:"versions"`
	}
	if err := e.getJSON(ctx, "/", "", &root); err != nil {
		return "", err
	}
	if len(root.Versions) == 0 {
		return "", fmt.Errorf("%s does not look like a Placement API (no versions at /)", e.URL)
	}
	return root.Versions[0].MaxVersion, nil
}

// minor is the N of "1.N", or -1.
func minor(version string) int {
	rest, ok := strings.CutPrefix(version, "1.")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return -1
	}
	return n
}

// forEach runs fn on 0..n-1 with the given number of workers and returns
// the first error; the others stop early once one fails.
func forEach(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if workers < 1 {
		workers = 1
	}
	var (
		mu    sync.Mutex
		first error
		next  int
		wg    sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if stop || i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

func escape(s string) string { return url.PathEscape(s) }
