package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
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

// peerURL is the URL of path on the API of the member at addr (host:port):
// members all serve HTTPS, or all plain HTTP (Config.APITLS).
func (n *Node) peerURL(addr, path string) string {
	return schemeFor(n.cfg.APITLS) + "://" + addr + path
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
func (c *Client) Self(ctx context.Context) (NodeStatus, error) {
	var st NodeStatus
	err := c.do(ctx, http.MethodGet, "/_cluster/self", nil, &st)
	return st, err
}

// Join asks the cluster to add a node.
func (c *Client) Join(ctx context.Context, req JoinRequest) error {
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

// JoinCluster announces this node to the cluster through any of targets
// (API addresses of members) until one accepts or ctx ends. Joining is
// idempotent, so a restarting member announces itself again (its API
// address may have changed).
func (n *Node) JoinCluster(ctx context.Context, targets []string, secret string, nonVoter bool) error {
	req := n.joinRequest(nonVoter)
	hc := apiClient(n.cfg.APITLS)
	defer hc.CloseIdleConnections()
	var last error
	for {
		for _, t := range targets {
			if t == n.cfg.HTTPAddr {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			err := (&Client{Addr: t, Secret: secret, TLS: n.cfg.APITLS, HTTP: hc}).Join(cctx, req)
			cancel()
			if err == nil {
				return nil
			}
			last = fmt.Errorf("joining through %s: %w", t, err)
			var se *StatusError
			if errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden ||
				se.Code == http.StatusConflict && (strings.Contains(se.Detail, ErrBuildTooOld.Error()) || strings.Contains(se.Detail, ErrWrongNextSecret.Error()))) {
				return last // retrying will not help
			}
		}
		if last == nil {
			return errors.New("join: no address to join through")
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(time.Second):
		}
	}
}

// Leave removes this node from the cluster (a voluntary leave): a leader
// hands leadership over first, then the leader removes this node. The
// last voter does not leave: there would be no cluster left.
func (n *Node) Leave(ctx context.Context, secret string) error {
	if !n.IsMember() || n.Alone() {
		return nil
	}
	if n.voters() == 1 && n.isVoter() {
		return nil
	}
	hc := apiClient(n.cfg.APITLS)
	defer hc.CloseIdleConnections()
	if n.isVoter() {
		if err := n.leaveKeepsQuorum(ctx, hc, secret); err != nil {
			return err
		}
	}
	if n.IsLeader() {
		if err := n.TransferLeadership(); err != nil {
			return fmt.Errorf("leave: transferring leadership: %w", err)
		}
	}
	var last error
	for {
		if id, addr := n.Leader(); id != "" && id != n.cfg.NodeID && addr != "" {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			last = (&Client{Addr: addr, Secret: secret, TLS: n.cfg.APITLS, HTTP: hc}).Remove(cctx, n.cfg.NodeID)
			cancel()
			var se *StatusError
			if last == nil || (errors.As(last, &se) && se.Code == http.StatusNotFound) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = ctx.Err()
			}
			return fmt.Errorf("leave: %w", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ErrLeaveLosesQuorum: a voter did not leave because the other voters that
// are healthy would not be a quorum of the configuration without it.
var ErrLeaveLosesQuorum = errors.New("leaving would lose the quorum")

// leaveKeepsQuorum checks that the other voters, asked now, are healthy
// enough to commit this node's removal and to go on without it. Removing
// a voter while another is down leaves a configuration whose quorum needs
// the dead one: the cluster then stops until it returns, and this node's
// return would not help, as it is no longer a member. Staying a member
// (down, while stopped) keeps that quorum reachable.
func (n *Node) leaveKeepsQuorum(ctx context.Context, hc *http.Client, secret string) error {
	members, err := n.Members()
	if err != nil {
		return fmt.Errorf("leave: %w", err)
	}
	leader, _ := n.Leader()
	var others []Member
	for _, m := range members {
		if m.Voter && m.ID != n.cfg.NodeID {
			others = append(others, m)
		}
	}
	healthy := make([]bool, len(others))
	var wg sync.WaitGroup
	for i, m := range others {
		if m.HTTPAddr == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			var st NodeStatus
			c := &Client{Addr: m.HTTPAddr, Secret: secret, TLS: n.cfg.APITLS, HTTP: hc}
			healthy[i] = c.do(cctx, http.MethodGet, "/_cluster/self?digest=false", nil, &st) == nil && st.follows(leader)
		}()
	}
	wg.Wait()
	var up []string
	for i, ok := range healthy {
		if ok {
			up = append(up, others[i].ID)
		}
	}
	if need := len(others)/2 + 1; len(up) < need {
		return fmt.Errorf("%w: %d of the %d other voters are healthy (%v), %d needed", ErrLeaveLosesQuorum, len(up), len(others), up, need)
	}
	return nil
}

func (n *Node) isVoter() bool {
	members, err := n.Members()
	if err != nil {
		return false
	}
	for _, m := range members {
		if m.ID == n.cfg.NodeID {
			return m.Voter
		}
	}
	return false
}
