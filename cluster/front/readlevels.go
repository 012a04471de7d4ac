package front

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/placementd/placementd/cluster/backend"
)

// Read levels, weakest last (docs/cluster.md "Read levels"):
//
//	linearizable  the default. The leader answers after its read barrier;
//	              a follower asks the leader for a read index, waits until
//	              its own state includes it and answers from its state
//	              (the answer's bytes stay on the follower); when that
//	              fails it forwards the whole request, as before.
//	bounded       X-Placementd-Max-Staleness: DURATION. Any node answers
//	              from its own state when its newest confirmation
//	              (cluster/readindex.go) is at most DURATION old; otherwise the
//	              read is served as a linearizable one, or refused with
//	              503 when X-Placementd-Max-Staleness-Strict: true.
//	stale         X-Placementd-Stale-Read: true. The node's state as it
//	              is, however old.
//
// Every answer a node produces says what it is: the node, the index of the
// state it came from, whether a leader is known, and for reads the level
// met and how old the state may be.
const (
	MaxStalenessHeader       = "X-Placementd-Max-Staleness"
	MaxStalenessStrictHeader = "X-Placementd-Max-Staleness-Strict"
	// ReadLevelHeader: linearizable, bounded or stale (reads only).
	ReadLevelHeader = "X-Placementd-Read-Level"
	// AppliedIndexHeader: the Raft index of the last write in the state
	// the answer was read from (the state_index of /_cluster/self).
	AppliedIndexHeader = "X-Placementd-Applied-Index"
	// LastContactHeader (reads only): milliseconds since the serving
	// node's newest confirmation with the leader, the most the answer may
	// lag behind acknowledged writes; 0 for a linearizable answer. Absent
	// when the node has had no confirmation since it started.
	LastContactHeader = "X-Placementd-Last-Contact"
	// KnownLeaderHeader: whether the serving node knows a leader.
	KnownLeaderHeader = "X-Placementd-Known-Leader"
)

// ReadServer is implemented by an API that serves a read with the
// options the front chose for it (httpapi.Server): the level it meets,
// whether the front made the state fresh enough already, and where the
// index of the state it was served from goes (the answer's
// AppliedIndexHeader). The API passes them to the node's Read.
type ReadServer interface {
	ServeRead(w http.ResponseWriter, r *http.Request, opts backend.ReadOptions)
}

// readLevel is what a read asked for.
type readLevel struct {
	level  backend.Level
	bound  time.Duration // bounded: the largest age accepted
	strict bool          // bounded: refuse rather than go to the leader
}

// readLevelOf parses a read's level headers; the stale header wins.
func readLevelOf(r *http.Request) (readLevel, error) {
	if strings.EqualFold(r.Header.Get(StaleReadHeader), "true") {
		return readLevel{level: backend.Stale}, nil
	}
	v := r.Header.Get(MaxStalenessHeader)
	if v == "" {
		return readLevel{level: backend.Linearizable}, nil
	}
	bound, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || bound <= 0 {
		return readLevel{}, fmt.Errorf("%s must be a positive duration such as 500ms or 5s, not %q", MaxStalenessHeader, v)
	}
	strict := false
	if s := r.Header.Get(MaxStalenessStrictHeader); s != "" {
		if strict, err = strconv.ParseBool(s); err != nil {
			return readLevel{}, fmt.Errorf("%s must be true or false, not %q", MaxStalenessStrictHeader, s)
		}
	}
	return readLevel{level: backend.Bounded, bound: bound, strict: strict}, nil
}

// read serves a GET or HEAD at the level it asks for.
func (h *Handler) read(w http.ResponseWriter, r *http.Request) {
	lv, err := readLevelOf(r)
	if err != nil {
		writeErrorBody(w, http.StatusBadRequest, err.Error())
		return
	}
	if brokenLocalReads {
		lv.level = backend.Stale
	}
	switch lv.level {
	case backend.Stale:
		h.serveLocal(w, r, h.api, backend.ReadOptions{Level: backend.Stale})
		return
	case backend.Bounded:
		h.confirmWithin(lv.bound)
		if age, ok := h.node.SinceConfirmed(); ok && age <= lv.bound {
			h.serveLocal(w, r, h.api, backend.ReadOptions{Level: backend.Bounded, MaxStaleness: lv.bound, Confirmed: true})
			return
		}
		if lv.strict {
			h.refuseStale(w, r, lv.bound)
			return
		}
	}
	// Linearizable. A follower answers from its own state once that
	// includes a read index asked for after the request came; a request
	// already forwarded once is not tried again here.
	if id, _ := h.node.Leader(); id != h.node.ID() && r.Header.Get(hopsHeader) == "" && !h.opts.ForwardReads {
		if h.followerRead(w, r) {
			return
		}
	}
	h.toLeader(w, r, h.api)
}

// followerRead serves a linearizable read on a follower from its own state
// once that includes a read index asked for after the read came (rounds
// shared with the other reads, readIndexRound). When no leader is known,
// or the leader asked is given up by this node's Raft or replaced, it
// waits for the next leader and asks it, as soon as this node learns of
// it; when none has answered within the wait for a leader (LeaderWait),
// it answers 503. It reports false, having answered nothing, when the read
// is the leader's to serve: this node leads, or the read index failed
// otherwise (the leader refused or has no read index, or this node's state
// lags), and the read is forwarded whole.
func (h *Handler) followerRead(w http.ResponseWriter, r *http.Request) bool {
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.LeaderWait)
	defer cancel()
	for {
		changed := h.node.LeaderChanges() // before the look: no change is missed
		id, _ := h.node.Leader()
		if id == h.node.ID() {
			return false
		}
		if id == "" {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
			}
		} else {
			err := h.followerReads.Join(ctx)
			if err == nil {
				h.serveLocal(w, r, h.api, backend.ReadOptions{Confirmed: true})
				return true
			}
			if errors.Is(err, errNoLeader) || errors.Is(err, errLeaderLost) || errors.Is(err, errNewLeader) {
				continue
			}
			if ctx.Err() == nil {
				return false
			}
		}
		if r.Context().Err() == nil {
			h.refuse(w, r, backend.Linearizable, "No leader gave a read index in time; the cluster may be electing one.")
		}
		return true
	}
}

// serveLocal answers with this node's handler, the answer describing
// itself (describe): a ReadServer serves it with opts, noting the index
// of the state it reads; another handler (the operator API's) as a
// linearizable request.
func (h *Handler) serveLocal(w http.ResponseWriter, r *http.Request, local http.Handler, opts backend.ReadOptions) {
	opts.Served = &backend.Served{}
	iw := &infoWriter{ResponseWriter: w}
	iw.before = func(status int) { h.describe(w.Header(), r, status, opts.Level, opts.Served) }
	if rs, ok := local.(ReadServer); ok {
		rs.ServeRead(iw, r, opts)
	} else {
		local.ServeHTTP(iw, r)
	}
	if !iw.wrote {
		iw.WriteHeader(http.StatusOK)
	}
}

// describe sets the headers that say what an answer is: served, when
// set, holds the index of the state a read was served from.
func (h *Handler) describe(hd http.Header, r *http.Request, status int, level backend.Level, served *backend.Served) {
	if h.mayNameNodes(r) {
		hd.Set(ServedByHeader, h.node.ID())
	}
	leader, _ := h.node.Leader()
	hd.Set(KnownLeaderHeader, strconv.FormatBool(leader != ""))
	isRead := r.Method == http.MethodGet || r.Method == http.MethodHead
	var index uint64
	read := false
	if served != nil {
		index, read = served.Index()
	}
	if !read || !isRead {
		// Nothing read, or a write: the state as the answer goes out.
		if st, err := h.node.Read(r.Context(), backend.ReadOptions{Level: backend.Stale}); err == nil {
			index = st.LastIndex
		}
	}
	hd.Set(AppliedIndexHeader, strconv.FormatUint(index, 10))
	if !isRead {
		return
	}
	if level == backend.Linearizable && status < 500 {
		hd.Set(ReadLevelHeader, level.String())
		hd.Set(LastContactHeader, "0")
		return
	}
	if status < 500 {
		hd.Set(ReadLevelHeader, level.String())
	}
	if age, ok := h.node.SinceConfirmed(); ok {
		hd.Set(LastContactHeader, strconv.FormatInt(age.Milliseconds(), 10))
	}
}

// infoWriter runs before just before the status line goes out.
type infoWriter struct {
	http.ResponseWriter
	before func(status int)
	wrote  bool
}

func (w *infoWriter) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.wrote = true
		w.before(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *infoWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *infoWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// refuseStale answers a strict bounded read that this node cannot serve.
func (h *Handler) refuseStale(w http.ResponseWriter, r *http.Request, bound time.Duration) {
	last := "has not been confirmed since the node started"
	if age, ok := h.node.SinceConfirmed(); ok {
		last = fmt.Sprintf("was last confirmed %d ms ago", age.Milliseconds())
	}
	h.refuse(w, r, backend.Bounded, fmt.Sprintf("This node's state %s with the leader, longer ago than the %s allowed by %s (strict). Retry, ask another node, or drop %s to let the read go to the leader.",
		last, bound, MaxStalenessHeader, MaxStalenessStrictHeader))
}

// refuse answers a read of level that this node cannot serve now: a 503
// to retry, describing this node as its answers do.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, level backend.Level, detail string) {
	h.describe(w.Header(), r, http.StatusServiceUnavailable, level, nil)
	writeUnavailable(w, detail, true)
}

// Keeping confirmations fresh. A node confirms its state every
// confirmEvery, and more often while bounded reads ask for it: at half the
// smallest bound asked for in the last paceHold (but not more often than
// minPace), so that a node in touch with the leader answers those reads
// from its own state. A confirmation costs a follower one small request to
// the leader and the leader at most one round of heartbeats, shared with
// its reads.
const (
	confirmEvery = time.Second
	minPace      = 50 * time.Millisecond
	paceHold     = 10 * time.Second
)

// pace is how often to confirm, and until when a faster pace holds.
type pace struct {
	mu    sync.Mutex
	every time.Duration
	until time.Time
	poke  chan struct{} // wakes the loop when a read finds it too slow
}

// confirmWithin notes that a read accepts state up to bound old.
func (h *Handler) confirmWithin(bound time.Duration) {
	every := max(bound/2, minPace)
	p := &h.pace
	p.mu.Lock()
	if time.Now().After(p.until) || every < p.every {
		p.every = every
	}
	p.until = time.Now().Add(paceHold)
	p.mu.Unlock()
	if age, ok := h.node.SinceConfirmed(); !ok || age > every {
		select {
		case p.poke <- struct{}{}:
		default:
		}
	}
}

func (h *Handler) confirmPace() time.Duration {
	p := &h.pace
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Now().After(p.until) {
		return confirmEvery
	}
	return min(p.every, confirmEvery)
}

// keepConfirmed confirms this node's state at the pace asked for, until
// the node stops.
func (h *Handler) keepConfirmed(ctx context.Context) {
	for ctx.Err() == nil {
		every := h.confirmPace()
		if age, ok := h.node.SinceConfirmed(); ok && age < every {
			select {
			case <-ctx.Done():
			case <-time.After(every - age):
			case <-h.pace.poke:
			}
			continue
		}
		if err := h.confirm(ctx); err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(max(every, 100*time.Millisecond)):
			}
		}
	}
}

// confirm confirms this node's state once: a read barrier on the leader, a
// read index elsewhere.
func (h *Handler) confirm(ctx context.Context) error {
	if h.node.IsLeader() {
		ctx, cancel := context.WithTimeout(ctx, h.node.ApplyTimeout())
		defer cancel()
		return h.node.ReadBarrier(ctx)
	}
	return h.followerReads.Join(ctx)
}

var (
	errNoReadIndex = errors.New("the leader gives no read index")
	errNoLeader    = errors.New("no leader is known")
)

// readIndexRound is one round of a follower's read index: ask the leader
// for its read index, wait until this node's state includes it, and note
// the confirmation. Reads that joined the round then answer from the
// state. The request to the leader ends, and the round fails with
// errLeaderLost or errNewLeader, as soon as this node's Raft gives up on
// that leader or names another (a leader cut off by a partition never
// answers; the reads then ask the next one); otherwise it waits for the
// leader's answer as a forwarded read would, up to the leader's own bound
// on it (the apply timeout). The round also gives up when this node's state
// does not reach the index within half a heartbeat timeout (the leader
// sends what it committed within its commit timeout, far less; a node cut
// off from the leader's appends, or far behind, does better to forward its
// reads at once). An answer is used only by the reads of the round that
// asked for it, all begun before it was asked for (docs/design.md).
func (h *Handler) readIndexRound() error {
	id, addr := h.node.Leader()
	if id == "" {
		return errNoLeader
	}
	if addr == "" || id == h.node.ID() || h.noReadIndex.has(addr) {
		return errNoReadIndex
	}
	return h.node.Confirm(func() (uint64, error) {
		leads, cancel := context.WithCancelCause(context.Background())
		go func() { cancel(h.leaderGone(leads, id)) }()
		fetch, stop := context.WithTimeout(leads, h.node.ApplyTimeout())
		index, err := h.fetchReadIndex(fetch, addr, h.node.Term())
		stop()
		cancel(nil)
		if gone := context.Cause(leads); err != nil && (gone == errLeaderLost || gone == errNewLeader) {
			return 0, gone
		}
		return index, err
	}, h.node.Timing().Heartbeat/2)
}

// readIndexPath is the leader's read index endpoint. Only members may ask
// (a member token, member.go): the asker's claim of its id and term lets
// the leader skip a round of heartbeats, and the id names a node.
const readIndexPath = "/_cluster/read-index"

type readIndexAnswer struct {
	Index uint64 `json:"index"`
}

// fetchReadIndex asks the API at addr for its read index, saying that
// this node was in term as it asked. A leader that does not know the
// endpoint (an older version, during a rolling upgrade) is remembered,
// and reads go to it whole.
func (h *Handler) fetchReadIndex(ctx context.Context, addr string, term uint64) (uint64, error) {
	q := url.Values{"id": {h.node.ID()}, "term": {strconv.FormatUint(term, 10)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.node.PeerURL(addr, readIndexPath+"?"+q.Encode()), nil)
	if err != nil {
		return 0, err
	}
	h.signMember(req)
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusUnauthorized, http.StatusForbidden:
		h.noReadIndex.note(addr)
		fallthrough
	default:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return 0, fmt.Errorf("read index from %s: %s", addr, resp.Status)
	}
	var ans readIndexAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&ans); err != nil {
		return 0, fmt.Errorf("read index from %s: %w", addr, err)
	}
	return ans.Index, nil
}

// serveReadIndex answers GET /_cluster/read-index?id=NODE&term=TERM on the
// leader: NODE asks, and was in TERM as it asked. A false claim only
// changes the answer to the request that makes it.
func (h *Handler) serveReadIndex(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.node.ApplyTimeout())
	defer cancel()
	term, _ := strconv.ParseUint(r.URL.Query().Get("term"), 10, 64)
	index, err := h.node.ReadIndex(ctx, r.URL.Query().Get("id"), term)
	if err != nil {
		writeUnavailable(w, "Cannot give a read index: "+err.Error(), true)
		return
	}
	writeJSONBody(w, http.StatusOK, readIndexAnswer{Index: index})
}

// noReadIndex remembers, for a minute, the API address of a leader that
// has no read index endpoint.
type noReadIndex struct {
	mu    sync.Mutex
	addr  string
	until time.Time
}

func (n *noReadIndex) note(addr string) {
	n.mu.Lock()
	n.addr, n.until = addr, time.Now().Add(time.Minute)
	n.mu.Unlock()
}

func (n *noReadIndex) has(addr string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addr == addr && time.Now().Before(n.until)
}
