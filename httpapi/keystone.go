package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"
)

// KeystoneConfig is the [keystone_authtoken] section of keystonemiddleware,
// as placementd takes it (flags --keystone-*): the Keystone v3 endpoint and
// placementd's own service credentials, with which it validates the tokens
// callers send.
type KeystoneConfig struct {
	// AuthURL is Keystone's identity endpoint, with or without /v3, where
	// placementd authenticates its service user.
	AuthURL string
	// Interface and RegionName choose where tokens are validated, as
	// keystonemiddleware's identity adapter does: at the identity
	// endpoint of that interface (default "internal") and region (any,
	// when empty) in the catalog of placementd's own token, which may
	// differ from AuthURL.
	Interface, RegionName string
	// Username, Password, ProjectName and the domains (by name or id;
	// names default to "Default") are placementd's service user.
	Username, Password                 string
	ProjectName                        string
	UserDomainName, UserDomainID       string
	ProjectDomainName, ProjectDomainID string
	// WWWAuthenticateURI goes into the WWW-Authenticate header of a 401
	// (default: AuthURL), telling clients where to authenticate.
	WWWAuthenticateURI string
	// TokenCacheTime bounds how long a validated token is trusted without
	// asking Keystone again (keystonemiddleware's token_cache_time; default
	// 300 s; negative: no caching; TokenCacheNoTimeLimit: until the entry
	// is evicted, as keystonemiddleware's token_cache_time = 0). A revoked
	// token stays usable here until its cache entry expires; an expired
	// one never is (expiry is checked on every request).
	TokenCacheTime time.Duration
	// InvalidTokenCacheTime is how long a token Keystone refused is refused
	// again without asking (default DefaultInvalidTokenCacheTime; negative,
	// or TokenCacheTime negative: not cached). A client that repeats a bogus
	// token then costs Keystone one call per this time, not one per request.
	InvalidTokenCacheTime time.Duration
	// ServiceTokenRoles: an X-Service-Token with one of these roles lets an
	// expired user token through (default: service).
	ServiceTokenRoles []string
	// ServiceTokenRolesRequired: a valid X-Service-Token without one of
	// ServiceTokenRoles gets the request refused (401), as
	// keystonemiddleware's service_token_roles_required; without it such a
	// token is accepted but does not let an expired user token through.
	ServiceTokenRolesRequired bool
	// ServiceType is Placement's type in the catalog ("placement"), needed
	// to honour application credentials restricted by access rules; empty
	// refuses such credentials, as keystonemiddleware does.
	ServiceType string
	// Timeout bounds each call to Keystone (default 10 s).
	Timeout time.Duration
	// TLS is the client side of HTTPS to Keystone (nil: the system's
	// roots); KeystoneTLS builds it from [keystone_authtoken]'s cafile,
	// certfile, keyfile and insecure.
	TLS *tls.Config
	// MaxValidations bounds the calls to Keystone in flight at once
	// (0: DefaultMaxKeystoneValidations; negative: no bound). A request
	// whose token is not cached waits for a place until its deadline,
	// then is answered 503; cached tokens never wait.
	MaxValidations int
	// HTTPClient talks to Keystone (default: one with Timeout, TLS and
	// at most MaxValidations connections).
	HTTPClient *http.Client
}

// TokenCacheNoTimeLimit is KeystoneConfig.TokenCacheTime for
// keystonemiddleware's token_cache_time = 0: a validated token stays
// cached until the cache's bound evicts it.
const TokenCacheNoTimeLimit = time.Duration(math.MaxInt64)

// KeystoneTLS is the TLS client configuration of [keystone_authtoken]'s
// options as keystoneauth's session takes them: caFile replaces the
// system's roots, certFile (with keyFile, or holding the key too) is a
// client certificate, insecure skips verifying Keystone's certificate.
// Nil when none is set.
func KeystoneTLS(caFile, certFile, keyFile string, insecure bool) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" && !insecure {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("cafile: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cafile: %s holds no PEM certificate", caFile)
		}
	}
	if keyFile != "" && certFile == "" {
		return nil, errors.New("keyfile needs certfile")
	}
	if certFile != "" {
		if keyFile == "" {
			keyFile = certFile
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("certfile/keyfile: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// keystone validates tokens the way keystonemiddleware's auth_token does.
type keystone struct {
	cfg      KeystoneConfig
	authBase string // AuthURL's v3 endpoint, no trailing slash
	client   *http.Client
	now      func() time.Time
	// slots holds a place for each call to Keystone in flight (nil: no
	// bound).
	slots chan struct{}

	mu         sync.Mutex
	svcToken   string
	svcBase    string    // the v3 identity endpoint from svcToken's catalog
	svcRefresh time.Time // when to fetch a new service token

	// valid holds what Keystone said of tokens it validated, by the hash
	// of the token, for TokenCacheTime: the data does not depend on
	// allow_expired (expiry is checked here, on every request). invalid
	// holds the tokens it refused, by hash and allow_expired (an expired
	// token is refused without allow_expired and valid with it), for
	// InvalidTokenCacheTime. Both are bounded LRUs; nil when off.
	valid   *expirable.LRU[[32]byte, *keystoneToken]
	invalid *expirable.LRU[tokenQuery, struct{}]
	// flights shares one validation among the requests asking the same
	// question at once: the same token with the same allow_expired.
	flights singleflight.Group
}

// tokenQuery is one question to Keystone: a token (by hash), validated
// with or without allow_expired.
type tokenQuery struct {
	hash         [32]byte
	allowExpired bool
}

func (q tokenQuery) flightKey() string {
	return fmt.Sprintf("%x/%t", q.hash, q.allowExpired)
}

const (
	// maxCachedTokens bounds each token cache (valid, invalid).
	maxCachedTokens = 10000
	// DefaultInvalidTokenCacheTime is KeystoneConfig.InvalidTokenCacheTime's
	// default: short, since a refusal for a passing reason (a token used
	// a moment before Keystone knows it) should not last.
	DefaultInvalidTokenCacheTime = 10 * time.Second
	// DefaultMaxKeystoneValidations is KeystoneConfig.MaxValidations'
	// default: ample for the tokens a node has not seen yet (most
	// requests find theirs cached), far below what exhausts a node's
	// descriptors or a Keystone's workers.
	DefaultMaxKeystoneValidations = 50
)

// errInvalidToken: Keystone does not know the token, or it has expired.
var errInvalidToken = errors.New("token authorization failed")

// errServiceTokenRoles: a valid service token without any of
// ServiceTokenRoles, refused under ServiceTokenRolesRequired.
var errServiceTokenRoles = errors.New("the service token has none of the service token roles")

// keystoneUnavailable: Keystone could not be asked (or refused placementd's
// own credentials); the request is answered 503.
type keystoneUnavailable struct{ err error }

func (e *keystoneUnavailable) Error() string { return "keystone unavailable: " + e.err.Error() }

// errValidationsBusy: no place for another call to Keystone came before
// the request's deadline.
var errValidationsBusy = errors.New("too many Keystone validations in flight")

// v3Base is the v3 API under an identity endpoint given with or without
// its version.
func v3Base(url string) string {
	base := strings.TrimRight(url, "/")
	if !strings.HasSuffix(base, "/v3") {
		base += "/v3"
	}
	return base
}

func newKeystone(cfg KeystoneConfig) *keystone {
	if cfg.Interface == "" {
		cfg.Interface = "internal"
	}
	if cfg.WWWAuthenticateURI == "" {
		cfg.WWWAuthenticateURI = cfg.AuthURL
	}
	if cfg.TokenCacheTime == 0 {
		cfg.TokenCacheTime = 300 * time.Second
	}
	if cfg.ServiceTokenRoles == nil {
		cfg.ServiceTokenRoles = []string{"service"}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.UserDomainName == "" && cfg.UserDomainID == "" {
		cfg.UserDomainName = "Default"
	}
	if cfg.ProjectDomainName == "" && cfg.ProjectDomainID == "" {
		cfg.ProjectDomainName = "Default"
	}
	if cfg.InvalidTokenCacheTime == 0 {
		cfg.InvalidTokenCacheTime = DefaultInvalidTokenCacheTime
	}
	if cfg.MaxValidations == 0 {
		cfg.MaxValidations = DefaultMaxKeystoneValidations
	}
	client := cfg.HTTPClient
	if client == nil {
		transport := http.DefaultTransport.(*http.Transport).Clone()
		transport.TLSClientConfig = cfg.TLS
		if cfg.MaxValidations > 0 {
			// Belt and braces: the slots already bound the calls.
			transport.MaxConnsPerHost = cfg.MaxValidations
			transport.MaxIdleConnsPerHost = cfg.MaxValidations
		}
		client = &http.Client{Timeout: cfg.Timeout, Transport: transport}
	}
	k := &keystone{cfg: cfg, authBase: v3Base(cfg.AuthURL), client: client, now: time.Now}
	if cfg.MaxValidations > 0 {
		k.slots = make(chan struct{}, cfg.MaxValidations)
	}
	k.sizeCaches(maxCachedTokens)
	return k
}

// sizeCaches makes the token caches, each bounded to size entries.
func (k *keystone) sizeCaches(size int) {
	k.valid, k.invalid = nil, nil
	if k.cfg.TokenCacheTime > 0 {
		ttl := k.cfg.TokenCacheTime
		if ttl == TokenCacheNoTimeLimit {
			ttl = 0 // the LRU's "no expiry"
		}
		k.valid = expirable.NewLRU[[32]byte, *keystoneToken](size, nil, ttl)
		if k.cfg.InvalidTokenCacheTime > 0 {
			k.invalid = expirable.NewLRU[tokenQuery, struct{}](size, nil, k.cfg.InvalidTokenCacheTime)
		}
	}
}

// keystoneToken is the part of a v3 token validation Placement needs.
type keystoneToken struct {
	ExpiresAt keystoneTime `json:"expires_at"`
	User      struct {
		ID     string    `json:"id"`
		Name   string    `json:"name"`
		Domain idAndName `json:"domain"`
	} `json:"user"`
	Project *struct {
		ID     string    `json:"id"`
		Name   string    `json:"name"`
		Domain idAndName `json:"domain"`
	} `json:"project"`
	Domain *idAndName `json:"domain"`
	System *struct {
		All bool `json:"all"`
	} `json:"system"`
	Roles          []idAndName `json:"roles"`
	IsAdminProject *bool       `json:"is_admin_project"`
	AppCred        *struct {
		// Nil when the credential is unrestricted.
		AccessRules *[]accessRule `json:"access_rules"`
	} `json:"application_credential"`
	// Catalog is read from placementd's own token only (tokens it
	// validates are asked for without their catalog).
	Catalog []struct {
		Type      string `json:"type"`
		Endpoints []struct {
			Interface string `json:"interface"`
			URL       string `json:"url"`
			Region    string `json:"region"`
			RegionID  string `json:"region_id"`
		} `json:"endpoints"`
	} `json:"catalog"`
}

// identityEndpoint is the v3 identity endpoint of the interface and
// region wanted in the token's catalog, as keystoneauth's catalog lookup
// finds it (the first that matches).
func (t *keystoneToken) identityEndpoint(iface, region string) (string, error) {
	iface = strings.TrimSuffix(iface, "URL") // keystoneauth also takes "internalURL"
	for _, svc := range t.Catalog {
		if svc.Type != "identity" {
			continue
		}
		for _, ep := range svc.Endpoints {
			if ep.Interface == iface && (region == "" || region == ep.RegionID || region == ep.Region) {
				return v3Base(ep.URL), nil
			}
		}
	}
	where := "interface " + iface
	if region != "" {
		where += ", region " + region
	}
	return "", fmt.Errorf("no identity endpoint of %s in the catalog of placementd's token (the [keystone_authtoken] interface and region_name choose it)", where)
}

// keystoneTime is a timestamp as Keystone writes it: ISO 8601, normally in
// UTC with a Z, sometimes without the zone (then UTC too).
type keystoneTime struct{ time.Time }

func (t *keystoneTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if v, err := time.Parse(layout, s); err == nil {
			t.Time = v
			return nil
		}
	}
	return fmt.Errorf("unrecognised time %q", s)
}

type idAndName struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type accessRule struct {
	Method  string `json:"method"`
	Path    string `json:"path"`
	Service string `json:"service"`
}

func (t *keystoneToken) roleNames() []string {
	out := make([]string, len(t.Roles))
	for i, r := range t.Roles {
		out[i] = r.Name
	}
	return out
}

// serviceToken returns placementd's own token and the identity endpoint
// its catalog names, authenticating with its password when it has none
// or it is about to expire.
func (k *keystone) serviceToken(ctx context.Context) (tok, base string, err error) {
	k.mu.Lock()
	tok, base, refresh := k.svcToken, k.svcBase, k.svcRefresh
	k.mu.Unlock()
	if tok != "" && k.now().Before(refresh) {
		return tok, base, nil
	}
	user := map[string]any{"name": k.cfg.Username, "password": k.cfg.Password, "domain": domainRef(k.cfg.UserDomainID, k.cfg.UserDomainName)}
	auth := map[string]any{"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{"user": user}}}
	if k.cfg.ProjectName != "" {
		auth["scope"] = map[string]any{"project": map[string]any{"name": k.cfg.ProjectName, "domain": domainRef(k.cfg.ProjectDomainID, k.cfg.ProjectDomainName)}}
	}
	body, _ := json.Marshal(map[string]any{"auth": auth})
	// With its catalog: the identity endpoint to validate at is there.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, k.authBase+"/auth/tokens", bytes.NewReader(body))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	// Authenticating again is harmless: let the client retry on a fresh
	// connection when a kept-alive one turns out closed.
	req.Header["Idempotency-Key"] = nil
	resp, err := k.client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("authenticating as %q: %s: %s", k.cfg.Username, resp.Status, bytes.TrimSpace(data))
	}
	var parsed struct {
		Token keystoneToken `json:"token"`
	}
	tok = resp.Header.Get("X-Subject-Token")
	if err := json.Unmarshal(data, &parsed); err != nil || tok == "" {
		return "", "", fmt.Errorf("authenticating as %q: unexpected answer from Keystone", k.cfg.Username)
	}
	if base, err = parsed.Token.identityEndpoint(k.cfg.Interface, k.cfg.RegionName); err != nil {
		return "", "", err
	}
	// Renew two minutes before expiry (as keystoneauth does), or halfway
	// through a shorter life.
	now := k.now()
	margin := 2 * time.Minute
	if life := parsed.Token.ExpiresAt.Time.Sub(now); life < 2*margin {
		margin = life / 2
	}
	k.mu.Lock()
	k.svcToken, k.svcBase, k.svcRefresh = tok, base, parsed.Token.ExpiresAt.Time.Add(-margin)
	k.mu.Unlock()
	return tok, base, nil
}

func domainRef(id, name string) map[string]string {
	if id != "" {
		return map[string]string{"id": id}
	}
	return map[string]string{"name": name}
}

// dropServiceToken forgets a service token Keystone refused.
func (k *keystone) dropServiceToken(tok string) {
	k.mu.Lock()
	if k.svcToken == tok {
		k.svcToken = ""
	}
	k.mu.Unlock()
}

// fetch returns the token's data from the caches or from Keystone; it
// does not check expiry. Concurrent requests asking the same question (the
// same token and allow_expired) share one call.
func (k *keystone) fetch(ctx context.Context, token string, allowExpired bool) (*keystoneToken, error) {
	q := tokenQuery{hash: sha256.Sum256([]byte(token)), allowExpired: allowExpired}
	if k.valid != nil {
		if t, ok := k.valid.Get(q.hash); ok {
			return t, nil
		}
	}
	if k.invalid != nil {
		if _, ok := k.invalid.Get(q); ok {
			return nil, errInvalidToken
		}
	}
	ch := k.flights.DoChan(q.flightKey(), func() (any, error) {
		// A place among the calls in flight, waited for until the
		// deadline of the request that started the call.
		if k.slots != nil {
			select {
			case k.slots <- struct{}{}:
				defer func() { <-k.slots }()
			case <-ctx.Done():
				return nil, errValidationsBusy
			}
		}
		// The call outlives a client that goes away: others may wait on it.
		cctx, cancel := context.WithTimeout(context.Background(), k.cfg.Timeout)
		defer cancel()
		t, err := k.validate(cctx, token, allowExpired)
		switch {
		case err == nil && k.valid != nil:
			k.valid.Add(q.hash, t)
		case errors.Is(err, errInvalidToken) && k.invalid != nil:
			k.invalid.Add(q, struct{}{})
		}
		return t, err
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*keystoneToken), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// validate asks Keystone about token (GET /v3/auth/tokens with the token
// as X-Subject-Token), authenticated with the service token; a refused
// service token is renewed once.
func (k *keystone) validate(ctx context.Context, token string, allowExpired bool) (*keystoneToken, error) {
	for attempt := 0; ; attempt++ {
		svc, base, err := k.serviceToken(ctx)
		if err != nil {
			return nil, &keystoneUnavailable{err}
		}
		u := base + "/auth/tokens?nocatalog"
		if allowExpired {
			u += "&allow_expired=1"
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, &keystoneUnavailable{err}
		}
		req.Header.Set("X-Auth-Token", svc)
		req.Header.Set("X-Subject-Token", token)
		// Without it Keystone refuses tokens of restricted application
		// credentials; the rules are enforced below.
		req.Header.Set("OpenStack-Identity-Access-Rules", "1")
		resp, err := k.client.Do(req)
		if err != nil {
			return nil, &keystoneUnavailable{err}
		}
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			var parsed struct {
				Token *keystoneToken `json:"token"`
			}
			if err := json.Unmarshal(data, &parsed); err != nil || parsed.Token == nil || parsed.Token.User.ID == "" {
				return nil, errInvalidToken
			}
			return parsed.Token, nil
		case http.StatusNotFound:
			return nil, errInvalidToken
		case http.StatusUnauthorized:
			k.dropServiceToken(svc)
			if attempt == 0 {
				continue
			}
		}
		return nil, &keystoneUnavailable{fmt.Errorf("validating a token: %s: %s", resp.Status, bytes.TrimSpace(data))}
	}
}

// check returns the token's data if it is valid now (or expired but
// allowed), for a request to method and path.
func (k *keystone) check(ctx context.Context, token string, allowExpired bool, r *http.Request, serviceTokenSent bool) (*keystoneToken, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return nil, errInvalidToken
	}
	t, err := k.fetch(ctx, token, allowExpired)
	if err != nil {
		return nil, err
	}
	if !allowExpired && !k.now().Before(t.ExpiresAt.Time) {
		return nil, errInvalidToken
	}
	if r != nil && !k.accessAllowed(t, r, serviceTokenSent) {
		return nil, errInvalidToken
	}
	return t, nil
}

// accessAllowed enforces the access rules of a restricted application
// credential, as keystonemiddleware's validate_allowed_request does (save
// its check that the service type is in the catalog, which placementd does
// not fetch).
func (k *keystone) accessAllowed(t *keystoneToken, r *http.Request, serviceTokenSent bool) bool {
	if t.AppCred == nil || t.AppCred.AccessRules == nil {
		return true
	}
	if k.cfg.ServiceType == "" {
		return false
	}
	if serviceTokenSent {
		// A service acting for the user in a chain of requests.
		return true
	}
	for _, rule := range *t.AppCred.AccessRules {
		if rule.Method == r.Method && rule.Service == k.cfg.ServiceType && accessPathMatches(r.URL.Path, rule.Path) {
			return true
		}
	}
	return false
}

// accessPathMatches matches a path against an access rule's template:
// {name} and * match one segment, ** any number.
func accessPathMatches(path, pattern string) bool {
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(pattern); {
		switch {
		case pattern[i] == '{':
			end := strings.IndexByte(pattern[i:], '}')
			if end < 0 {
				return false
			}
			re.WriteString(`[^/]+`)
			i += end + 1
		case strings.HasPrefix(pattern[i:], "**"):
			re.WriteString(".*")
			i += 2
		case pattern[i] == '*':
			re.WriteString(`[^/]+`)
			i++
		default:
			re.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
			i++
		}
	}
	re.WriteString("$")
	ok, err := regexp.MatchString(re.String(), path)
	return err == nil && ok
}

// keystoneAuthHeaders are the headers keystonemiddleware sets from a token
// (WSGI keys), removed from every request so that a caller cannot fake
// them.
var keystoneAuthHeaders = func() map[string]bool {
	keys := map[string]bool{}
	for _, h := range []string{"X-Service-Catalog", "X-Identity-Status", "X-Service-Identity-Status",
		"X-Is-Admin-Project", "X-Role", "X-User", "X-Tenant-Id", "X-Tenant-Name", "X-Tenant",
		"OpenStack-System-Scope"} {
		keys[envKey(h)] = true
	}
	for _, prefix := range []string{"", "-Service"} {
		for _, h := range []string{"Domain-Id", "Domain-Name", "Project-Id", "Project-Name",
			"Project-Domain-Id", "Project-Domain-Name", "User-Id", "User-Name", "User-Domain-Id",
			"User-Domain-Name", "Roles"} {
			keys[envKey("X"+prefix+"-"+h)] = true
		}
	}
	return keys
}()

func removeAuthHeaders(h http.Header) {
	for name := range h {
		if keystoneAuthHeaders[envKey(name)] {
			delete(h, name)
		}
	}
}

// setTokenHeaders sets the headers keystonemiddleware derives from a token
// (prefix "" for the user, "-Service" for a service token); absent values
// leave their header unset.
func setTokenHeaders(h http.Header, t *keystoneToken, prefix string) {
	set := func(name, v string) {
		if v != "" {
			h.Set(name, v)
		}
	}
	set("X"+prefix+"-Roles", strings.Join(t.roleNames(), ","))
	if prefix == "" && t.System != nil && t.System.All {
		h.Set("OpenStack-System-Scope", "all")
	}
	if t.Domain != nil {
		set("X"+prefix+"-Domain-Id", t.Domain.ID)
		set("X"+prefix+"-Domain-Name", t.Domain.Name)
	}
	if t.Project != nil {
		set("X"+prefix+"-Project-Id", t.Project.ID)
		set("X"+prefix+"-Project-Name", t.Project.Name)
		set("X"+prefix+"-Project-Domain-Id", t.Project.Domain.ID)
		set("X"+prefix+"-Project-Domain-Name", t.Project.Domain.Name)
	}
	set("X"+prefix+"-User-Id", t.User.ID)
	set("X"+prefix+"-User-Name", t.User.Name)
	set("X"+prefix+"-User-Domain-Id", t.User.Domain.ID)
	set("X"+prefix+"-User-Domain-Name", t.User.Domain.Name)
	if prefix != "" {
		return
	}
	isAdmin := "True"
	if t.IsAdminProject != nil && !*t.IsAdminProject {
		isAdmin = "False"
	}
	h.Set("X-Is-Admin-Project", isAdmin)
	// The deprecated names keystonemiddleware still sets.
	for old, cur := range map[string]string{"X-Role": "X-Roles", "X-User": "X-User-Name",
		"X-Tenant-Id": "X-Project-Id", "X-Tenant-Name": "X-Project-Name", "X-Tenant": "X-Project-Name"} {
		set(old, h.Get(cur))
	}
}

// keystoneAuth is upstream's PlacementAuthProtocol (keystonemiddleware's
// auth_token, which lets / through) followed by PlacementKeystoneContext:
// the request's token is validated against Keystone and the credentials
// come from it, never from headers the caller sent.
func (s *Server) keystoneAuth(next http.Handler) http.Handler {
	k := s.keystone
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		removeAuthHeaders(r.Header)
		if r.URL.Path == "/" || r.URL.Path == "" {
			infoOf(r).creds = contextFromHeaders(r.Header)
			next.ServeHTTP(w, r)
			return
		}
		var user, service *keystoneToken
		var err error
		serviceToken, hasService := envHeader(r.Header, "HTTP_X_SERVICE_TOKEN")
		allowExpired := false
		if hasService {
			service, err = k.check(r.Context(), serviceToken, false, nil, false)
			if err == nil {
				allowExpired = hasAnyRole(service.roleNames(), k.cfg.ServiceTokenRoles)
				if !allowExpired && k.cfg.ServiceTokenRolesRequired {
					err = errServiceTokenRoles
				}
			}
		}
		if err == nil {
			userToken, ok := envHeader(r.Header, "HTTP_X_AUTH_TOKEN")
			if !ok {
				userToken, _ = envHeader(r.Header, "HTTP_X_STORAGE_TOKEN")
			}
			user, err = k.check(r.Context(), userToken, allowExpired, r, hasService)
		}
		var unavailable *keystoneUnavailable
		switch {
		case errors.As(err, &unavailable):
			s.cfg.Logger.Error("unable to validate token", "error", err, "request_id", infoOf(r).id)
			renderError(w, r, http.StatusServiceUnavailable, "The Keystone service is temporarily unavailable.", "", formatWebobJSON)
			return
		case errors.Is(err, errValidationsBusy) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			// No place among the validations in flight, or the request's
			// deadline (or client) went while it waited for one: the
			// same answer as a Keystone that cannot be asked.
			s.cfg.Logger.Info("unable to validate token", "error", err, "request_id", infoOf(r).id)
			renderError(w, r, http.StatusServiceUnavailable, "The Keystone service is temporarily unavailable.", "", formatWebobJSON)
			return
		case err != nil:
			s.cfg.Logger.Info("rejecting request", "reason", err.Error(), "request_id", infoOf(r).id)
			k.reject(w)
			return
		}
		r.Header.Set("X-Identity-Status", "Confirmed")
		setTokenHeaders(r.Header, user, "")
		if service != nil {
			r.Header.Set("X-Service-Identity-Status", "Confirmed")
			setTokenHeaders(r.Header, service, "-Service")
		}
		c := contextFromHeaders(r.Header)
		infoOf(r).creds = c
		next.ServeHTTP(w, r)
	})
}

// reject is keystonemiddleware's 401, body and headers as it sends them:
// its Content-Type has no charset (webob adds one only to text and XML
// types, whatever charset the middleware passes).
func (k *keystone) reject(w http.ResponseWriter) {
	h := w.Header()
	h.Set("WWW-Authenticate", `Keystone uri="`+k.cfg.WWWAuthenticateURI+`"`)
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	io.WriteString(w, `{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}`)
}

func hasAnyRole(have, want []string) bool {
	for _, h := range have {
		for _, w := range want {
			if h == w {
				return true
			}
		}
	}
	return false
}
