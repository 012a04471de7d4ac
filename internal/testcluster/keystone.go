package testcluster

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Keystone is a small stand-in for Keystone's token API, for the tests
// that need no real Keystone (httpapi's Keystone integration test runs a
// real one). It authenticates any service user (token "svc", whose
// catalog names the stand-in as the internal identity endpoint) and knows
// a valid token "good" (a reader), "svc-user" (the service and admin
// roles) and "expired" (valid only with allow_expired); any other token
// is unknown (404). It counts the validations it answers and the
// connections open to it.
type Keystone struct {
	// URL is its v3 endpoint.
	URL string
	// Started is told of every validation as it begins.
	Started chan string

	mu    sync.Mutex
	calls map[string]int // "token/allow_expired" -> validations
	// hold, when set, delays every validation until it is closed.
	hold chan struct{}
	// open is the connections open to it now, maxOpen the most at once.
	open, maxOpen int
}

// NewKeystone starts a stand-in Keystone on loopback until the test ends.
func NewKeystone(t testing.TB) *Keystone {
	k := &Keystone{calls: map[string]int{}, Started: make(chan string, 1000)}
	srv := httptest.NewUnstartedServer(k)
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		k.mu.Lock()
		defer k.mu.Unlock()
		switch state {
		case http.StateNew:
			k.open++
			k.maxOpen = max(k.maxOpen, k.open)
		case http.StateClosed, http.StateHijacked:
			k.open--
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	k.URL = srv.URL + "/v3"
	return k
}

// Count is the validations of token asked with or without allow_expired.
func (k *Keystone) Count(token string, allowExpired bool) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.calls[fmt.Sprintf("%s/%t", token, allowExpired)]
}

// Validations is the validations of every token.
func (k *Keystone) Validations() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, c := range k.calls {
		n += c
	}
	return n
}

// MaxOpen is the most connections that were open to it at once.
func (k *Keystone) MaxOpen() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.maxOpen
}

// Hold makes every validation from now on wait, unanswered, until
// release is called (at the latest when the test ends).
func (k *Keystone) Hold(t testing.TB) (release func()) {
	hold := make(chan struct{})
	release = sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release) // before the server closes: cleanups run last first
	k.mu.Lock()
	k.hold = hold
	k.mu.Unlock()
	return release
}

func (k *Keystone) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	token := func(expires, user string, roles ...string) map[string]any {
		rs := []map[string]string{}
		for _, r := range roles {
			rs = append(rs, map[string]string{"id": r, "name": r})
		}
		return map[string]any{"token": map[string]any{
			"expires_at": expires,
			"user":       map[string]any{"id": user, "name": user, "domain": map[string]string{"id": "default", "name": "Default"}},
			"project":    map[string]any{"id": "p1", "name": "p1", "domain": map[string]string{"id": "default", "name": "Default"}},
			"roles":      rs,
		}}
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodPost {
		w.Header().Set("X-Subject-Token", "svc")
		w.WriteHeader(http.StatusCreated)
		svc := token(future, "placement", "service")
		// Tokens are validated at the catalog's internal identity
		// endpoint: this stand-in.
		svc["token"].(map[string]any)["catalog"] = []any{map[string]any{"type": "identity", "endpoints": []any{
			map[string]string{"interface": "internal", "region_id": "RegionOne", "url": "http://" + r.Host + "/v3"}}}}
		json.NewEncoder(w).Encode(svc)
		return
	}
	if r.Header.Get("X-Auth-Token") != "svc" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	subject, allowExpired := r.Header.Get("X-Subject-Token"), r.URL.Query().Has("allow_expired")
	k.mu.Lock()
	k.calls[fmt.Sprintf("%s/%t", subject, allowExpired)]++
	hold := k.hold
	k.mu.Unlock()
	k.Started <- subject
	if hold != nil {
		<-hold
	}
	switch {
	case subject == "good":
		json.NewEncoder(w).Encode(token(future, "u1", "reader"))
	case subject == "svc-user":
		json.NewEncoder(w).Encode(token(future, "nova", "service", "admin"))
	case subject == "expired" && allowExpired:
		json.NewEncoder(w).Encode(token(past, "u1", "reader"))
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}
