package front

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/placementd/placementd/cluster"
)

// Client talks to the operator API of a cluster (the CLI, joining and
// leaving nodes). Addr is any member's API address, host:port or a URL.
type Client struct {
	Addr   string
	Secret string
	// TLS, when set, makes an Addr without a scheme an https:// one, and
	// verifies the server against TLS.RootCAs (nil: the system roots)
	// unless HTTP is given. An https:// Addr works without it.
	TLS  *tls.Config
	HTTP *http.Client
}

func (c *Client) url(path string) string {
	addr := strings.TrimSuffix(c.Addr, "/")
	if !strings.Contains(addr, "://") {
		addr = schemeFor(c.TLS) + "://" + addr
	}
	return addr + path
}

// BaseURL is the root of the API the client talks to, with its scheme.
func (c *Client) BaseURL() string { return c.url("") }

// HTTPClient is the client c sends with: c.HTTP, or one that verifies the
// API against c.TLS.
func (c *Client) HTTPClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return apiClient(c.TLS)
}

func schemeFor(tlsConf *tls.Config) string {
	if tlsConf != nil {
		return "https"
	}
	return "http"
}

// apiClient is an HTTP client for the APIs of members: with tlsConf, it
// verifies their certificates against tlsConf.RootCAs.
func apiClient(tlsConf *tls.Config) *http.Client {
	if tlsConf == nil {
		return http.DefaultClient
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = clientTLS(tlsConf)
	return &http.Client{Transport: tr}
}

// clientTLS is a copy of c that speaks TLS 1.2 or later.
func clientTLS(c *tls.Config) *tls.Config {
	c = c.Clone()
	c.MinVersion = max(c.MinVersion, tls.VersionTLS12)
	return c
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url(path), body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Secret != "" {
		req.Header.Set("Authorization", "Bearer "+c.Secret)
	}
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return responseError(resp)
	}
	if w, ok := out.(io.Writer); ok {
		_, err = io.Copy(w, resp.Body)
		return err
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// StatusError is a non-2xx answer of the operator API.
type StatusError struct {
	Code   int
	Detail string
}

func (e *StatusError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Detail) }

func responseError(resp *http.Response) error {
	var body struct {
		Errors []struct {
			Detail string `json:"detail"`
		} `json:"errors"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	detail := strings.TrimSpace(string(raw))
	if json.Unmarshal(raw, &body) == nil && len(body.Errors) > 0 {
		detail = strings.TrimSpace(body.Errors[0].Detail)
	}
	return &StatusError{Code: resp.StatusCode, Detail: detail}
}

// Status fetches the cluster status.
func (c *Client) Status(ctx context.Context) (ClusterStatus, error) {
	var st ClusterStatus
	err := c.do(ctx, http.MethodGet, "/_cluster/status", nil, &st)
	return st, err
}

// Self fetches the report of the node at Addr.
func (c *Client) Self(ctx context.Context) (cluster.NodeStatus, error) {
	var st cluster.NodeStatus
	err := c.do(ctx, http.MethodGet, "/_cluster/self", nil, &st)
	return st, err
}

// Join asks the cluster to add a node.
func (c *Client) Join(ctx context.Context, req cluster.JoinRequest) error {
	return c.do(ctx, http.MethodPost, "/_cluster/join", req, nil)
}

// Remove asks the cluster to remove node id.
func (c *Client) Remove(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, "/_cluster/remove", map[string]string{"id": id}, nil)
}

// TransferLeadership asks the leader to hand leadership to voter to, or
// with to "" to the voter Raft picks.
func (c *Client) TransferLeadership(ctx context.Context, to string) (TransferResult, error) {
	var res TransferResult
	err := c.do(ctx, http.MethodPost, "/_cluster/transfer-leadership", TransferRequest{To: to}, &res)
	return res, err
}

// Snapshot writes a consistent placement snapshot of the cluster to w.
func (c *Client) Snapshot(ctx context.Context, w io.Writer) error {
	return c.do(ctx, http.MethodGet, "/_cluster/snapshot", nil, w)
}
