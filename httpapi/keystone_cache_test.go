package httpapi

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/internal/testcluster"
)

// The token cache, against testcluster's stand-in for Keystone's token API
// (the integration test needs a real Keystone; these run anywhere).

// 100 requests with the same bogus token make one validation: the refusal
// is cached (and concurrent ones share the call in flight).
func TestKeystoneCachesInvalidTokens(t *testing.T) {
	f := testcluster.NewKeystone(t)
	url := f.URL
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
	if n := f.Count("bogus", false); n != 1 {
		t.Fatalf("100 requests with one bogus token made %d validations, want 1", n)
	}
	// A valid token is cached too, and still works.
	for i := 0; i < 10; i++ {
		if r := call(t, base, "GET", "/resource_providers", "good", "1.9", ""); r.status != 403 && r.status != 200 {
			t.Fatalf("good token: %d %s", r.status, r.body)
		}
	}
	if n := f.Count("good", false); n != 1 {
		t.Fatalf("10 requests with a valid token made %d validations, want 1", n)
	}
}

// The refusal of an expired token without allow_expired is not the answer
// to a request whose service token allows expired user tokens, even when
// both are in flight at once or the refusal is cached.
func TestKeystoneAllowExpiredGetsItsOwnAnswer(t *testing.T) {
	f := testcluster.NewKeystone(t)
	url := f.URL
	_, base := newKeystoneAPI(t, KeystoneConfig{AuthURL: url, Username: "placement", Password: "pw"}, false)
	// Validate the service token first, so that only the user token's
	// validations are held below.
	if r := call(t, base, "GET", "/resource_providers", "svc-user", "1.9", ""); r.status != 200 {
		t.Fatalf("service user's own request: %d %s", r.status, r.body)
	}
	<-f.Started
	release := f.Hold(t)
	plain, withService := make(chan rawResp, 1), make(chan rawResp, 1)
	go func() { plain <- call(t, base, "GET", "/resource_providers", "expired", "1.9", "") }()
	<-f.Started // the plain validation is in flight
	go func() {
		withService <- call(t, base, "GET", "/resource_providers", "expired", "1.9", "", "X-Service-Token", "svc-user")
	}()
	select {
	case <-f.Started: // its own validation, with allow_expired
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
	if a, b := f.Count("expired", false), f.Count("expired", true); a != 1 || b != 1 {
		t.Errorf("validations of the expired token: %d plain, %d with allow_expired; want 1 and 1", a, b)
	}
}

// The caches hold at most their bound, dropping the least recently used.
func TestKeystoneCacheBound(t *testing.T) {
	f := testcluster.NewKeystone(t)
	url := f.URL
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
	if a, b := f.Count("bogus-9", false), f.Count("bogus-0", false); a != 1 || b != 2 {
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
	f := testcluster.NewKeystone(t)
	url := f.URL
	const bound, tokens = 8, 200
	node := testcluster.OpenNode(t, cluster.Config{}, nil)
	// Calls outlive the test's requests (a call that times out gives its
	// place to the next, whose count would blur the bound's).
	ks := KeystoneConfig{AuthURL: url, Username: "placement", Password: "pw", MaxValidations: bound, Timeout: time.Minute}
	base := testcluster.Serve(t, New(node, Config{Keystone: &ks, RequestTimeout: 3 * time.Second, Logger: slog.New(slog.DiscardHandler)})).URL
	if r := call(t, base, "GET", "/resource_providers", "good", "", ""); r.status != 200 {
		t.Fatalf("good token: %d %s", r.status, r.body)
	}
	<-f.Started

	f.Hold(t)
	answers := make(chan rawResp, tokens)
	for i := 0; i < tokens; i++ {
		go func() { answers <- call(t, base, "GET", "/resource_providers", fmt.Sprintf("slow-%d", i), "", "") }()
	}
	for i := 0; i < bound; i++ {
		select {
		case <-f.Started:
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
	validations, maxOpen := f.Validations(), f.MaxOpen()
	if validations > bound+1 || maxOpen > bound {
		t.Errorf("%d distinct tokens: %d validations reached Keystone, %d connections at most; bound %d", tokens, validations-1, maxOpen, bound)
	}
}
