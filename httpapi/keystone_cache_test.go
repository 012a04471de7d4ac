package httpapi

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/internal/testcluster"
)

// The token cache, against a small stand-in for Keystone's token API (the
// integration test above needs a real Keystone; these run anywhere). The
// stand-in knows a service user, a valid token "good", an expired token
// "expired" (valid only with allow_expired), a service token "svc-user"
// with the service role, and counts the validations it answers.
type fakeKeystone struct {
	mu    sync.Mutex
	calls map[string]int // "token/allow_expired" -> validations
	// hold, when set, delays every validation until it is closed.
	hold chan struct{}
	// started is told of every validation as it begins.
	started chan string
	// open is the connections open to it now, maxOpen the most at once.
	open, maxOpen int
}

func newFakeKeystone(t *testing.T) (*fakeKeystone, string) {
	f := &fakeKeystone{calls: map[string]int{}, started: make(chan string, 1000)}
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		f.mu.Lock()
		defer f.mu.Unlock()
		switch state {
		case http.StateNew:
			f.open++
			f.maxOpen = max(f.maxOpen, f.open)
		case http.StateClosed, http.StateHijacked:
			f.open--
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return f, srv.URL + "/v3"
}

func (f *fakeKeystone) count(token string, allowExpired bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[fmt.Sprintf("%s/%t", token, allowExpired)]
}

func (f *fakeKeystone) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	f.mu.Lock()
	f.calls[fmt.Sprintf("%s/%t", subject, allowExpired)]++
	hold := f.hold
	f.mu.Unlock()
	f.started <- subject
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

// 100 requests with the same bogus token make one validation: the refusal
// is cached (and concurrent ones share the call in flight).
func TestKeystoneCachesInvalidTokens(t *testing.T) {
	f, url := newFakeKeystone(t)
	_, base := newKeystoneAPI(t, KeystoneConfig{AuthURL: url, Username: "placement", Password: "pw"}, false)
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := call(t, base, "GET", "/resource_providers", "bogus", "1.9", ""); r.status != 401 {
				t.Errorf("bogus token: %d %s", r.status, r.body)
			}
		}()
		if i == 49 {
			wg.Wait() // half at once, half once the refusal is cached
		}
	}
	wg.Wait()
	if n := f.count("bogus", false); n != 1 {
		t.Fatalf("100 requests with one bogus token made %d validations, want 1", n)
	}
	// A valid token is cached too, and still works.
	for i := 0; i < 10; i++ {
		if r := call(t, base, "GET", "/resource_providers", "good", "1.9", ""); r.status != 403 && r.status != 200 {
			t.Fatalf("good token: %d %s", r.status, r.body)
		}
	}
	if n := f.count("good", false); n != 1 {
		t.Fatalf("10 requests with a valid token made %d validations, want 1", n)
	}
}

// The refusal of an expired token without allow_expired is not the answer
// to a request whose service token allows expired user tokens, even when
// both are in flight at once or the refusal is cached.
func TestKeystoneAllowExpiredGetsItsOwnAnswer(t *testing.T) {
	f, url := newFakeKeystone(t)
	_, base := newKeystoneAPI(t, KeystoneConfig{AuthURL: url, Username: "placement", Password: "pw"}, false)
	// Validate the service token first, so that only the user token's
	// validations are held below.
	if r := call(t, base, "GET", "/resource_providers", "svc-user", "1.9", ""); r.status != 200 {
		t.Fatalf("service user's own request: %d %s", r.status, r.body)
	}
	<-f.started
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release() // before the stand-in's server closes
	f.mu.Lock()
	f.hold = hold
	f.mu.Unlock()
	plain, withService := make(chan rawResp, 1), make(chan rawResp, 1)
	go func() { plain <- call(t, base, "GET", "/resource_providers", "expired", "1.9", "") }()
	<-f.started // the plain validation is in flight
	go func() {
		withService <- call(t, base, "GET", "/resource_providers", "expired", "1.9", "", "X-Service-Token", "svc-user")
	}()
	select {
	case <-f.started: // its own validation, with allow_expired
	case r := <-withService:
		t.Fatalf("the service-token request did not ask Keystone with allow_expired: %d %s", r.status, r.body)
	case <-time.After(10 * time.Second):
		t.Fatal("the service-token request made no validation of its own")
	}
	release()
	if r := <-plain; r.status != 401 {
		t.Errorf("expired token alone: %d %s", r.status, r.body)
	}
	if r := <-withService; r.status != 200 && r.status != 403 {
		t.Errorf("expired token with a service token: %d %s", r.status, r.body)
	}
	// Now the refusal is cached; the service-token request still passes.
	if r := call(t, base, "GET", "/resource_providers", "expired", "1.9", "", "X-Service-Token", "svc-user"); r.status != 200 && r.status != 403 {
		t.Errorf("expired token with a service token after a cached refusal: %d %s", r.status, r.body)
	}
	if a, b := f.count("expired", false), f.count("expired", true); a != 1 || b != 1 {
		t.Errorf("validations of the expired token: %d plain, %d with allow_expired; want 1 and 1", a, b)
	}
}

// The caches hold at most their bound, dropping the least recently used.
func TestKeystoneCacheBound(t *testing.T) {
	f, url := newFakeKeystone(t)
	k := newKeystone(KeystoneConfig{AuthURL: url, Username: "placement", Password: "pw"})
	k.sizeCaches(3)
	ctx := t.Context()
	for i := 0; i < 10; i++ {
		if _, err := k.check(ctx, fmt.Sprintf("bogus-%d", i), false, nil, false); err != errInvalidToken {
			t.Fatalf("bogus-%d: %v", i, err)
		}
	}
	if n := k.invalid.Len(); n != 3 {
		t.Fatalf("%d invalid tokens cached, bound 3", n)
	}
	// The newest are kept, the oldest asked again.
	k.check(ctx, "bogus-9", false, nil, false)
	k.check(ctx, "bogus-0", false, nil, false)
	if a, b := f.count("bogus-9", false), f.count("bogus-0", false); a != 1 || b != 2 {
		t.Fatalf("validations: bogus-9 %d (want 1, cached), bogus-0 %d (want 2, evicted)", a, b)
	}
	if _, err := k.check(ctx, "good", false, nil, false); err != nil {
		t.Fatal(err)
	}
	if n := k.valid.Len(); n != 1 {
		t.Fatalf("%d valid tokens cached, want 1", n)
	}
}

// Calls to Keystone in flight are bounded (KeystoneConfig.MaxValidations):
// many distinct tokens against a Keystone that never answers hold at
// most the bound of connections to it, the requests waiting for a place
// are answered 503 at their deadline, and a cached token is answered at
// once all the while.
func TestKeystoneValidationsBounded(t *testing.T) {
	f, url := newFakeKeystone(t)
	const bound, tokens = 8, 200
	node := testcluster.OpenNode(t, cluster.Config{}, nil)
	// Calls outlive the test's requests (a call that times out gives its
	// place to the next, whose count would blur the bound's).
	ks := KeystoneConfig{AuthURL: url, Username: "placement", Password: "pw", MaxValidations: bound, Timeout: time.Minute}
	base := testcluster.Serve(t, New(node, Config{Keystone: &ks, RequestTimeout: 3 * time.Second, Logger: slog.New(slog.DiscardHandler)})).URL
	if r := call(t, base, "GET", "/resource_providers", "good", "", ""); r.status != 200 {
		t.Fatalf("good token: %d %s", r.status, r.body)
	}
	<-f.started

	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release() // before the stand-in's server closes
	f.mu.Lock()
	f.hold = hold
	f.mu.Unlock()
	answers := make(chan rawResp, tokens)
	for i := 0; i < tokens; i++ {
		go func() { answers <- call(t, base, "GET", "/resource_providers", fmt.Sprintf("slow-%d", i), "", "") }()
	}
	for i := 0; i < bound; i++ {
		select {
		case <-f.started:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d validations reached Keystone, want %d", i, bound)
		}
	}
	// Keystone is saturated and requests wait: a cached token does not.
	start := time.Now()
	if r := call(t, base, "GET", "/resource_providers", "good", "", ""); r.status != 200 {
		t.Fatalf("cached token while Keystone hangs: %d %s", r.status, r.body)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("cached token while Keystone hangs took %s", d)
	}
	for i := 0; i < tokens; i++ {
		r := <-answers
		if r.status != 503 || !strings.Contains(r.body, "The Keystone service is temporarily unavailable.") {
			t.Fatalf("a token Keystone never answers for: %d %s", r.status, r.body)
		}
	}
	f.mu.Lock()
	validations, maxOpen := 0, f.maxOpen
	for _, n := range f.calls {
		validations += n
	}
	f.mu.Unlock()
	if validations > bound+1 || maxOpen > bound {
		t.Errorf("%d distinct tokens: %d validations reached Keystone, %d connections at most; bound %d", tokens, validations-1, maxOpen, bound)
	}
}
