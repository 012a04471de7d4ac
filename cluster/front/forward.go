package front

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/backend"
)

// Headers of the forwarding protocol.
const (
	// StaleReadHeader: a client sending "X-Placementd-Stale-Read: true" on
	// a GET accepts an answer from the local node's state, which may miss
	// writes acknowledged elsewhere, instead of a linearizable one.
	StaleReadHeader = "X-Placementd-Stale-Read"
	// hopsHeader counts how often a request was forwarded, so that nodes
	// with different views of the leader cannot bounce it forever. An
	// internal header: honoured only with a member token (member.go).
	hopsHeader = "X-Placementd-Forwarded-Hops"
	// ServedByHeader names the node whose API produced the response; it
	// is sent only to callers with the cluster secret (member.go).
	ServedByHeader = "X-Placementd-Served-By"
	// NotAppliedHeader marks a 503 whose write certainly did not reach the
	// log (the node was not, or no longer, leading): a forwarding node
	// sends it again to the next leader instead of relaying the 503. The
	// API sets it too, so it is defined beside the node's errors.
	NotAppliedHeader = backend.NotAppliedHeader
	maxHops          = 2
)

// Options configure the cluster front of the API.
type Options struct {
	// Secret authenticates the operator API (/_cluster/...): joining,
	// removing, status, snapshots. Empty: only /_cluster/health answers.
	Secret string
	// SecretNext, during a rotation of the secret, is accepted beside
	// Secret: from callers of the operator API and in member tokens
	// (secretrotation.go). This node still sends Secret.
	SecretNext string
	// LeaderWait bounds how long a request waits for a reachable leader
	// during an election before it is answered 503 (default 10 s).
	LeaderWait time.Duration
	// MaxBodyBytes bounds the forwarded request bodies this front reads
	// itself (default 16 MiB + 1, so the leader's own limit answers 413):
	// the operator API's, and the API's when it is no BodyReader.
	MaxBodyBytes int64
	// ForwardReads makes a follower forward linearizable reads whole to
	// the leader, as before read indexes (for comparison: bench/).
	ForwardReads bool
	// MaxApplyLag is how many entries the state machine may be behind the
	// commit index, while it applies, before /readyz says not ready
	// (default 1000).
	MaxApplyLag uint64
	Logger      *slog.Logger
	// LeaderRegions: regions the leader should be in, most preferred
	// first (leaderregions.go); Run moves leadership there.
	LeaderRegions []string
}

// BodyReader is implemented by an API that bounds the request bodies it
// holds at once (httpapi.Server): the front of a follower reads the body
// of an API request it forwards to the leader through it, so that the
// body counts against the same bound as the bodies the API decodes, and
// bodies sent to a follower cost it what they cost the leader. On failure
// (a body that did not arrive, no room under the bound) ReadForwarded has
// answered the client; otherwise the front calls release once it no
// longer holds the body.
type BodyReader interface {
	ReadForwarded(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool)
}

// Handler serves the whole Placement API on any node: the leader answers
// from its API; a follower forwards the request to the leader's API and
// relays its response, so a client sees what the leader would have said.
// It also serves the operator API under /_cluster/.
type Handler struct {
	node     *cluster.Node
	api      http.Handler
	opts     Options
	client   *http.Client
	conns    apiConns // the client's open connections (background.go)
	draining atomic.Bool

	// Read levels (readlevels.go): a follower's read index rounds, the
	// pace at which the node confirms its state, and a leader that has
	// no read index endpoint.
	followerReads *cluster.SharedRounds
	pace          pace
	noReadIndex   noReadIndex

	// memberKey signs and checks member tokens (member.go); nil without
	// a cluster secret: no request is then taken to come from a member.
	// nextMemberKey, from SecretNext, checks them too.
	memberKey, nextMemberKey []byte
}

// New builds the cluster front of api, served by node n. When api is a
// ReadServer, the reads this node serves itself go through ServeRead with
// the read options the front chose; otherwise through ServeHTTP, as
// linearizable reads.
func New(n *cluster.Node, api http.Handler, opts Options) *Handler {
	if opts.LeaderWait == 0 {
		opts.LeaderWait = 10 * time.Second
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = 16<<20 + 1
	}
	if opts.MaxApplyLag == 0 {
		opts.MaxApplyLag = 1000
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	h := &Handler{node: n, api: api, opts: opts, memberKey: memberKey(opts.Secret), nextMemberKey: memberKey(opts.SecretNext)}
	tr := &http.Transport{
		DialContext:         h.conns.dialer((&net.Dialer{Timeout: time.Second, KeepAlive: 30 * time.Second}).DialContext),
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     90 * time.Second,
	}
	if n.APITLS() != nil {
		tr.TLSClientConfig = clientTLS(n.APITLS())
		tr.TLSHandshakeTimeout = 5 * time.Second
	}
	h.client = &http.Client{
		Transport: tr,
		// Redirects are the client's business: relay them.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	h.followerReads = cluster.NewSharedRounds(h.readIndexRound)
	h.pace.poke = make(chan struct{}, 1)
	n.Go(func(stop <-chan struct{}) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		h.keepConfirmed(ctx)
	})
	return h
}

// SetDraining makes the node report not ready (for load balancers) while
// it keeps serving what reaches it.
func (h *Handler) SetDraining(v bool) { h.draining.Store(v) }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Internal headers only from members (member.go).
	r = h.admit(r)
	if strings.HasPrefix(r.URL.Path, "/_cluster/") {
		h.admin(w, r)
		return
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		h.read(w, r)
		return
	}
	h.toLeader(w, r, h.api)
}

// toLeader runs local (the API, or an operator handler) when this node
// leads, or forwards the request to the leader. It waits for a leader
// during an election, and tries the next leader when the one it knew
// cannot be reached: a request that was never sent is safe to send again.
// A write sent to a leader that died before answering has an unknown
// outcome: 503 with Retry-After.
func (h *Handler) toLeader(w http.ResponseWriter, r *http.Request, local http.Handler) {
	start := time.Now()
	hops := hopsOf(r)
	var body []byte
	bodyRead := false
	release := func() {}
	defer func() { release() }()
	deadline := time.Now().Add(h.opts.LeaderWait)
	for {
		changed := h.node.LeaderChanges() // before the look: no change is missed
		id, addr := h.node.Leader()
		// A leader that stopped taking writes for a graceful stop holds
		// them until the next leader is known, then forwards them.
		handingOver := id == h.node.ID() && isWrite(r) && h.node.WritesStopped() && !h.node.Alone() && !time.Now().After(deadline)
		if handingOver {
			addr = ""
		} else if id == h.node.ID() || hops >= maxHops || (id == "" && time.Now().After(deadline)) {
			// The local API answers 503 (with Retry-After, in Placement's
			// error format) when it turns out not to lead after all.
			if bodyRead {
				// The API takes its own share of the bound to decode it.
				release()
				release = func() {}
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
			h.serveLocal(w, r, local, backend.ReadOptions{})
			return
		}
		if addr != "" {
			if !bodyRead {
				var ok bool
				if body, release, ok = h.readBody(w, r); !ok {
					release = func() {}
					return
				}
				bodyRead = true
			}
			resp, err := h.send(r.WithContext(h.untilLeaderMoves(r.Context(), id, addr)), addr, body, hops+1)
			if err == nil && resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(NotAppliedHeader) != "" &&
				!time.Now().After(deadline) {
				// Refused before the log: safe to send to the next leader.
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				err = errNotApplied
			}
			if err == nil {
				h.logForwarded(r, id, resp, start)
				h.relay(w, r, resp)
				return
			}
			if r.Context().Err() != nil {
				return // the client went away
			}
			safe := !isWrite(r) || isDialError(err) || errors.Is(err, errNotApplied)
			if !safe {
				h.opts.Logger.Warn("forwarded write lost with the leader", "leader", id, "error", err)
				writeUnavailable(w, "The leader was lost while carrying out the request; its outcome is unknown. Retry it: generations make a retry safe.", true)
				return
			}
		}
		if time.Now().After(deadline) {
			writeUnavailable(w, "No leader is reachable; the cluster may be electing one.", true)
			return
		}
		// A new leader is tried as soon as this node learns of it.
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// readBody reads the body of r, to be forwarded: through the API when it
// is a BodyReader and r one of its requests, or here, up to MaxBodyBytes.
// It returns the function to call once the body is no longer held; on
// failure it has answered.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), ok bool) {
	if br, isReader := h.api.(BodyReader); isReader && !strings.HasPrefix(r.URL.Path, "/_cluster/") {
		return br.ReadForwarded(w, r)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		writeUnavailable(w, "reading the request body: "+err.Error(), false)
		return nil, nil, false
	}
	return body, func() {}, true
}

// logForwarded logs a request this node forwarded, under the request id
// the leader gave it (the X-Openstack-Request-Id of its answer, which the
// leader's own request log shows): a request can be followed across nodes.
func (h *Handler) logForwarded(r *http.Request, leader string, resp *http.Response, start time.Time) {
	uri := r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		uri += "?" + r.URL.RawQuery
	}
	h.opts.Logger.Info("forwarded", "remote", r.RemoteAddr, "method", r.Method, "uri", uri, "leader", leader,
		"status", resp.StatusCode, "request_id", resp.Header.Get(requestIDHeader),
		"duration_ms", float64(time.Since(start).Microseconds())/1000)
}

// requestIDHeader carries the request id the API gives every request
// (oslo.middleware's header).
const requestIDHeader = "X-Openstack-Request-Id"

func (h *Handler) send(r *http.Request, addr string, body []byte, hops int) (*http.Response, error) {
	u := *r.URL
	u.Scheme, u.Host = schemeFor(h.node.APITLS()), addr
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	for _, k := range hopByHop {
		out.Header.Del(k)
	}
	out.Header.Set(hopsHeader, strconv.Itoa(hops))
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := r.Header.Get("X-Forwarded-For"); prior != "" {
			host = prior + ", " + host
		}
		out.Header.Set("X-Forwarded-For", host)
	}
	out.Host = r.Host
	if len(body) == 0 && r.ContentLength <= 0 {
		out.Body, out.ContentLength = http.NoBody, 0
	}
	h.signMember(out)
	return h.client.Do(out)
}

// hopByHop are the headers that belong to one connection (RFC 9110 7.6.1).
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// relay sends the client of r the answer resp of the node r was
// forwarded to, without the headers naming nodes when the client may not
// see them (the other node saw this node's member token).
func (h *Handler) relay(w http.ResponseWriter, r *http.Request, resp *http.Response) {
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	for _, k := range hopByHop {
		w.Header().Del(k)
	}
	if !h.mayNameNodes(r) {
		for _, k := range nodeNamingHeaders {
			w.Header().Del(k)
		}
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

var errNotApplied = errors.New("the leader refused the write before appending it")

func isWrite(r *http.Request) bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions
}

// isDialError reports whether err certainly came before the request was
// sent: dialing failed, or the TLS handshake was refused (the peer is not
// speaking TLS, or its certificate did not verify).
func isDialError(err error) bool {
	var op *net.OpError
	var rh tls.RecordHeaderError
	var cv *tls.CertificateVerificationError
	return errors.As(err, &op) && op.Op == "dial" || errors.As(err, &rh) || errors.As(err, &cv)
}

// writeUnavailable answers 503 in Placement's error format.
func writeUnavailable(w http.ResponseWriter, detail string, retry bool) {
	if retry {
		w.Header().Set("Retry-After", "1")
	}
	writeErrorBody(w, http.StatusServiceUnavailable, detail)
}

func writeErrorBody(w http.ResponseWriter, status int, detail string) {
	// A request id, as the API's errors carry, for the operator to quote.
	id := w.Header().Get(requestIDHeader)
	if id == "" {
		id = "req-" + uuid.NewString()
		w.Header().Set(requestIDHeader, id)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{
		"status": status, "title": http.StatusText(status), "detail": detail,
		"code": "placement.undefined_code", "request_id": id,
	}}})
}
