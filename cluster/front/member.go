package front

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Trusted headers. Nodes tell each other things in request headers (how
// often a request was forwarded) and answer with headers that name nodes
// (which node served the answer). A client must neither forge the first
// nor read the second without the cluster secret (docs/security.md,
// "Internal headers and member authentication"):
//
//   - a request from a client has every internal header removed at the
//     edge (ServeHTTP) before anything reads it;
//   - a node forwarding a request to another signs it with a member token
//     (memberHeader), an HMAC under a key derived from the cluster secret
//     binding the method, the request URI, the internal headers' values
//     and the time; the receiving node honours the internal headers only
//     when the token verifies (constant-time) and is recent;
//   - headers naming nodes (ServedByHeader) go only to callers that carry
//     the cluster secret (Authorization: Bearer SECRET) or a member token;
//     a node relaying a leader's answer to a client without the secret
//     removes them.
//
// The token proves that a node holding the secret sent the request within
// memberTokenWindow; it gives no API authority (the API authenticates the
// client's own token) and is not single-use: within the window, anyone who
// can read member-to-member HTTP (plaintext without --api-tls-*) can send
// the same method and URI again with the same internal header values,
// which changes only how that request is routed.

const (
	// memberHeader carries a member token: "v1.UNIX_SECONDS.HEX_HMAC".
	memberHeader = "X-Placementd-cluster.Member"
	// memberTokenWindow bounds the age (and clock skew) of a token.
	memberTokenWindow = 2 * time.Minute
)

// internalHeaders are set by one node for another: removed from requests
// that carry no valid member token.
var internalHeaders = []string{hopsHeader, memberHeader, NotAppliedHeader}

// nodeNamingHeaders name nodes: sent only to callers with the secret.
var nodeNamingHeaders = []string{ServedByHeader}

// memberKey derives the key of member tokens from the cluster secret, so
// that a token never tells anything about the secret itself.
func memberKey(secret string) []byte {
	if secret == "" {
		return nil
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("placementd member token v1"))
	return m.Sum(nil)
}

// memberMAC is the HMAC of what a token binds.
func memberMAC(key []byte, ts, method, uri, hops string) []byte {
	m := hmac.New(sha256.New, key)
	for _, s := range []string{"v1", ts, method, uri, hops} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// signMember sets the member token of out, a request this node sends to
// another member, after its internal headers are set.
func (h *Handler) signMember(out *http.Request) {
	if h.memberKey == nil {
		return
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	// The client writes out.URL.RequestURI() as the request line, which
	// the receiver reads back as r.RequestURI.
	mac := memberMAC(h.memberKey, ts, out.Method, out.URL.RequestURI(), out.Header.Get(hopsHeader))
	out.Header.Set(memberHeader, "v1."+ts+"."+hex.EncodeToString(mac))
}

// fromMember reports whether r carries a valid, recent member token.
func (h *Handler) fromMember(r *http.Request) bool {
	tok := r.Header.Get(memberHeader)
	if h.memberKey == nil || tok == "" {
		return false
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] != "v1" {
		return false
	}
	ts, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return false
	}
	if age := time.Since(time.Unix(ts, 0)); age > memberTokenWindow || age < -memberTokenWindow {
		return false
	}
	got, err := hex.DecodeString(parts[2])
	if err != nil {
		return false
	}
	uri := r.RequestURI
	if uri == "" {
		uri = r.URL.RequestURI()
	}
	for _, key := range [][]byte{h.memberKey, h.nextMemberKey} {
		if key != nil && hmac.Equal(got, memberMAC(key, parts[1], r.Method, uri, r.Header.Get(hopsHeader))) {
			return true
		}
	}
	return false
}

// caller is what the edge learnt about who sent a request.
type caller struct {
	member   bool // a valid member token: internal headers honoured
	operator bool // the cluster secret (or a member token): may see node names
}

type callerKey struct{}

// admit removes the internal headers of a request that does not come from
// a member, and notes in its context who sent it.
func (h *Handler) admit(r *http.Request) *http.Request {
	c := caller{member: h.fromMember(r)}
	if !c.member {
		for _, k := range internalHeaders {
			r.Header.Del(k)
		}
	}
	c.operator = c.member || h.authorized(r)
	return r.WithContext(context.WithValue(r.Context(), callerKey{}, c))
}

// callerOf is what admit noted (the zero caller when it did not run).
func callerOf(r *http.Request) caller {
	c, _ := r.Context().Value(callerKey{}).(caller)
	return c
}

// mayNameNodes reports whether the answer to r may name nodes: r carries
// the cluster secret or a member token.
func (h *Handler) mayNameNodes(r *http.Request) bool {
	if c, ok := r.Context().Value(callerKey{}).(caller); ok {
		return c.operator
	}
	return h.fromMember(r) || h.authorized(r)
}

// hopsOf is the hop count a member sent; a value no member sends (not a
// number, negative) counts as the most hops, so the request is not
// forwarded again.
func hopsOf(r *http.Request) int {
	v := r.Header.Get(hopsHeader)
	if v == "" {
		return 0
	}
	hops, err := strconv.Atoi(v)
	if err != nil || hops < 0 {
		return maxHops
	}
	return hops
}
