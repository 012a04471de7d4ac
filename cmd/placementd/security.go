package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/httpapi"
)

// securityFlags are the serve flags about authentication against Keystone
// and TLS.
type securityFlags struct {
	keystone httpapi.KeystoneConfig
	// keystoneCacheTime is token_cache_time; keystoneServiceRoles is
	// comma-separated.
	keystoneCacheTime time.Duration
	// keystoneInvalidCacheTime: how long a refused token stays refused.
	keystoneInvalidCacheTime time.Duration
	keystoneServiceRoles     string
	// [keystone_authtoken] cafile, certfile, keyfile, insecure: TLS to
	// Keystone (httpapi.KeystoneTLS).
	keystoneCAFile, keystoneCertFile, keystoneKeyFile string
	keystoneInsecure                                  bool
	// apiKeystone is what the API gets: nil unless --auth-strategy keystone.
	apiKeystone *httpapi.KeystoneConfig

	tlsCert, tlsKey, tlsCA             string
	raftTLSCert, raftTLSKey, raftTLSCA string
	// raftInsecure is --raft-insecure-plaintext: Raft without TLS even
	// with a cluster secret or several members.
	raftInsecure bool
	// raftLocalOnly: raftTLS is keyed by the data dir's own secret
	// (localRaftTLS), which no other node has: no cluster of several.
	raftLocalOnly bool
	// raftTLSDerived: raftTLS comes from the cluster secret, not files.
	raftTLSDerived bool
	// Built by loadTLS: the API's server side (nil: plain HTTP), the
	// client side for the peers' APIs, and Raft's mutual TLS.
	apiTLS, peerAPITLS, raftTLS *tls.Config
}

func (c *securityFlags) register(fs *flag.FlagSet) {
	k := &c.keystone
	// Named after keystonemiddleware's [keystone_authtoken] options.
	fs.StringVar(&k.AuthURL, "keystone-auth-url", "", "Keystone identity endpoint, e.g. http://keystone:5000/v3 ([keystone_authtoken] auth_url)")
	fs.StringVar(&k.Username, "keystone-username", "placement", "placementd's service user, which validates tokens ([keystone_authtoken] username)")
	fs.StringVar(&k.Password, "keystone-password", "", "the service user's password ([keystone_authtoken] password); prefer the environment variable or --config to the command line")
	fs.StringVar(&k.ProjectName, "keystone-project-name", "service", "the service user's project ([keystone_authtoken] project_name)")
	fs.StringVar(&k.UserDomainName, "keystone-user-domain-name", "Default", "the service user's domain ([keystone_authtoken] user_domain_name)")
	fs.StringVar(&k.UserDomainID, "keystone-user-domain-id", "", "the service user's domain by id, instead of the name ([keystone_authtoken] user_domain_id)")
	fs.StringVar(&k.ProjectDomainName, "keystone-project-domain-name", "Default", "the service project's domain ([keystone_authtoken] project_domain_name)")
	fs.StringVar(&k.ProjectDomainID, "keystone-project-domain-id", "", "the service project's domain by id, instead of the name ([keystone_authtoken] project_domain_id)")
	fs.StringVar(&k.WWWAuthenticateURI, "keystone-www-authenticate-uri", "", "public identity endpoint named in the WWW-Authenticate header of 401 answers (default: --keystone-auth-url) ([keystone_authtoken] www_authenticate_uri)")
	fs.StringVar(&k.Interface, "keystone-interface", "internal", "the catalog interface (public, internal, admin) of the identity endpoint that validates tokens; placementd authenticates at --keystone-auth-url and finds that endpoint in its token's catalog ([keystone_authtoken] interface)")
	fs.StringVar(&k.RegionName, "keystone-region-name", "", "the region of that identity endpoint (default: the first of any region) ([keystone_authtoken] region_name)")
	fs.StringVar(&c.keystoneCAFile, "keystone-cafile", "", "PEM CA bundle that verifies Keystone's HTTPS certificate, instead of the system's ([keystone_authtoken] cafile)")
	fs.StringVar(&c.keystoneCertFile, "keystone-certfile", "", "PEM client certificate for Keystone, if it asks for one ([keystone_authtoken] certfile)")
	fs.StringVar(&c.keystoneKeyFile, "keystone-keyfile", "", "PEM private key of --keystone-certfile (default: in that file) ([keystone_authtoken] keyfile)")
	fs.BoolVar(&c.keystoneInsecure, "keystone-insecure", false, "INSECURE: do not verify Keystone's HTTPS certificate ([keystone_authtoken] insecure)")
	fs.DurationVar(&c.keystoneCacheTime, "keystone-token-cache-time", 300*time.Second, "how long a validated token is trusted before Keystone is asked again; a revoked token is refused at the latest this long after revocation; 0: no time limit (until the token expires or the cache's bound evicts it), negative: no cache ([keystone_authtoken] token_cache_time, with its 0 and -1)")
	fs.DurationVar(&c.keystoneInvalidCacheTime, "keystone-invalid-token-cache-time", httpapi.DefaultInvalidTokenCacheTime, "how long a token Keystone refused is refused again without asking it (a client repeating a bogus token costs one validation per this time); 0 disables; off too when --keystone-token-cache-time is negative")
	fs.StringVar(&c.keystoneServiceRoles, "keystone-service-token-roles", "service", "comma-separated roles that let an X-Service-Token carry an expired user token ([keystone_authtoken] service_token_roles)")
	fs.BoolVar(&k.ServiceTokenRolesRequired, "keystone-service-token-roles-required", false, "refuse (401) a request whose X-Service-Token has none of --keystone-service-token-roles ([keystone_authtoken] service_token_roles_required)")
	fs.IntVar(&k.MaxValidations, "keystone-max-validations", httpapi.DefaultMaxKeystoneValidations, "calls to Keystone in flight at once; a request whose token is not cached waits for a place until its deadline, then gets 503 (cached tokens never wait); 0 or less: no bound")
	fs.StringVar(&k.ServiceType, "keystone-service-type", "", "Placement's service type in the catalog (placement), needed to accept application credentials restricted by access rules ([keystone_authtoken] service_type)")
	fs.DurationVar(&k.Timeout, "keystone-timeout", 10*time.Second, "bound on each request to Keystone ([keystone_authtoken] http_connect_timeout)")

	fs.StringVar(&c.tlsCert, "tls-cert-file", "", "PEM certificate (chain) of the API: with --tls-key-file, the API is served over HTTPS (TLS 1.2+) and this node reaches the other members' APIs with https; every member must agree")
	fs.StringVar(&c.tlsKey, "tls-key-file", "", "PEM private key of --tls-cert-file")
	fs.StringVar(&c.tlsCA, "tls-ca-file", "", "PEM CA bundle that verifies the other members' API certificates (default: the system roots); needs --tls-cert-file")
	fs.StringVar(&c.raftTLSCert, "raft-tls-cert-file", "", "PEM certificate of this node for Raft's mutual TLS, signed by --raft-tls-ca-file, with serverAuth and clientAuth usages (host names are not checked)")
	fs.StringVar(&c.raftTLSKey, "raft-tls-key-file", "", "PEM private key of --raft-tls-cert-file")
	fs.StringVar(&c.raftTLSCA, "raft-tls-ca-file", "", "PEM CA of the cluster's Raft certificates: Raft connections in both directions must present a certificate it signed; every member must agree (without the three files, a node with --cluster-secret uses mutual TLS with a CA derived from the secret)")
	fs.BoolVar(&c.raftInsecure, "raft-insecure-plaintext", false, "INSECURE: run Raft over plain, unauthenticated TCP, where anyone who reaches the Raft port can disrupt or rewrite the cluster; without it a node with --cluster-secret uses mutual TLS derived from the secret, and a node without secret or --raft-tls-* files refuses to join or form a multi-node cluster or to bind Raft to a non-loopback address")
}

// loadTLS checks that the TLS flags come in complete sets and loads the
// files, so that a bad setting stops serve before it touches anything.
func (c *securityFlags) loadTLS() error {
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together: give both or neither")
	}
	if c.tlsCA != "" && c.tlsCert == "" {
		return errors.New("--tls-ca-file needs --tls-cert-file and --tls-key-file: members serve their APIs over HTTPS all or none")
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
		}
		c.apiTLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		c.peerAPITLS = &tls.Config{MinVersion: tls.VersionTLS12}
		if c.tlsCA != "" {
			if c.peerAPITLS.RootCAs, err = loadCAFile("--tls-ca-file", c.tlsCA); err != nil {
				return err
			}
		}
	}

	set := 0
	for _, f := range []string{c.raftTLSCert, c.raftTLSKey, c.raftTLSCA} {
		if f != "" {
			set++
		}
	}
	switch set {
	case 0:
		return nil
	case 3:
	default:
		return errors.New("--raft-tls-cert-file, --raft-tls-key-file and --raft-tls-ca-file go together: give all three or none")
	}
	cert, err := tls.LoadX509KeyPair(c.raftTLSCert, c.raftTLSKey)
	if err != nil {
		return fmt.Errorf("--raft-tls-cert-file/--raft-tls-key-file: %w", err)
	}
	pool, err := loadCAFile("--raft-tls-ca-file", c.raftTLSCA)
	if err != nil {
		return err
	}
	// cluster.Open derives both sides (client certificates required and
	// verified against the CA) from these.
	c.raftTLS = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}
	return cluster.CheckRaftTLS(c.raftTLS)
}

// loadCAFile reads a PEM bundle of CA certificates.
func loadCAFile(flagName, path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: %s holds no PEM certificate", flagName, path)
	}
	return pool, nil
}

// keystoneConfig is the API's Keystone configuration for
// --auth-strategy keystone.
func (c *securityFlags) keystoneConfig() (*httpapi.KeystoneConfig, error) {
	k := c.keystone
	if k.AuthURL == "" {
		return nil, errors.New("--auth-strategy keystone needs --keystone-auth-url")
	}
	if k.Password == "" {
		return nil, errors.New("--auth-strategy keystone needs --keystone-password (or PLACEMENTD_KEYSTONE_PASSWORD)")
	}
	// An id given replaces the default name.
	if k.UserDomainID != "" {
		k.UserDomainName = ""
	}
	if k.ProjectDomainID != "" {
		k.ProjectDomainName = ""
	}
	// keystonemiddleware's token_cache_time: 0 caches with no time
	// limit, a negative time not at all (the Config's zero means default).
	switch k.TokenCacheTime = c.keystoneCacheTime; {
	case k.TokenCacheTime == 0:
		k.TokenCacheTime = httpapi.TokenCacheNoTimeLimit
	case k.TokenCacheTime < 0:
		k.TokenCacheTime = -1
	}
	if k.MaxValidations == 0 {
		k.MaxValidations = -1 // the Config's zero means default
	}
	var err error
	if k.TLS, err = httpapi.KeystoneTLS(c.keystoneCAFile, c.keystoneCertFile, c.keystoneKeyFile, c.keystoneInsecure); err != nil {
		return nil, fmt.Errorf("--keystone-*: %w", err)
	}
	k.InvalidTokenCacheTime = c.keystoneInvalidCacheTime
	if k.InvalidTokenCacheTime == 0 {
		k.InvalidTokenCacheTime = -1
	}
	k.ServiceTokenRoles = splitList(c.keystoneServiceRoles)
	if k.ServiceTokenRoles == nil {
		k.ServiceTokenRoles = []string{}
	}
	return &k, nil
}

// raftAuth settles how Raft peers prove membership, after loadTLS: the
// --raft-tls-* files when given; else, with a cluster secret, mutual TLS
// with a CA derived from it (cluster.RaftTLSFromSecret); else a lone node
// on a loopback Raft address (`placementd serve` with no flags), whose
// Raft localRaftTLS then keys with its data dir's own secret; or plain TCP
// with --raft-insecure-plaintext. checkRaftPeers refuses the multi-node cases
// once the membership is known.
func (c *securityFlags) raftAuth(secret, nodeID, raftAddr string, log *slog.Logger) error {
	if c.raftInsecure {
		if c.raftTLS != nil {
			return errors.New("--raft-insecure-plaintext contradicts --raft-tls-cert-file/--raft-tls-key-file/--raft-tls-ca-file: give one or the other")
		}
		log.Warn("RAFT IS UNAUTHENTICATED (--raft-insecure-plaintext): anyone who can reach the Raft port can depose the leader, stall elections or inject log entries; use only on a network only the members reach, and remove the flag as soon as you can", "raft_addr", raftAddr)
		return nil
	}
	if c.raftTLS != nil {
		return nil
	}
	if secret != "" {
		var err error
		c.raftTLS, err = cluster.RaftTLSFromSecret(secret, nodeID)
		c.raftTLSDerived = true
		if len(secret) < 16 {
			log.Warn("the cluster secret is short: it also keys Raft's TLS, and a short secret can be guessed offline from a Raft certificate; use a random one (openssl rand -hex 32)")
		}
		return err
	}
	if !loopbackAddr(raftAddr) {
		return fmt.Errorf("--raft-addr %s is not a loopback address and Raft has no authentication: give every node --cluster-secret (Raft then uses mutual TLS derived from it), or --raft-tls-cert-file/--raft-tls-key-file/--raft-tls-ca-file, or bind Raft to 127.0.0.1 for a single node; --raft-insecure-plaintext accepts the risk", raftAddr)
	}
	return nil
}

// checkRaftPeers refuses an unauthenticated Raft port in a cluster of
// more than one node: one to join or form (--join, --bootstrap-expect),
// or one the Raft state already knows (members).
func (c *securityFlags) checkRaftPeers(joins []string, bootstrapExpect, members int) error {
	if c.raftTLS != nil && !c.raftLocalOnly || c.raftInsecure {
		return nil
	}
	const fix = "give every node --cluster-secret (Raft then uses mutual TLS derived from it) or --raft-tls-cert-file/--raft-tls-key-file/--raft-tls-ca-file; --raft-insecure-plaintext accepts the risk"
	switch {
	case len(joins) > 0 || bootstrapExpect > 1:
		return fmt.Errorf("refusing to join or form a multi-node cluster with an unauthenticated Raft port: %s", fix)
	case members > 1:
		return fmt.Errorf("refusing to run a member of a %d-node cluster with an unauthenticated Raft port: %s", members, fix)
	}
	return nil
}

// loopbackAddr reports whether host:port binds only loopback: localhost
// or a loopback IP (not a wildcard, not another name).
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkSecretNext settles --cluster-secret-next: Raft's TLS derived from
// the secret also trusts the next secret's CA, and the ids of both
// secrets go to the node's joins (cluster/secretrotation.go).
func (c *clusterFlags) checkSecretNext(sec *securityFlags) error {
	c.secretIDs = nil
	if c.secretNext == "" {
		return nil
	}
	if c.secret == "" {
		return errors.New("--cluster-secret-next needs --cluster-secret: the next secret is accepted beside the current one")
	}
	if c.secretNext == c.secret {
		return errors.New("--cluster-secret-next is the same as --cluster-secret: drop it, or give the new secret")
	}
	if sec.raftTLS != nil && sec.raftTLSDerived {
		if err := cluster.TrustRaftSecret(sec.raftTLS, c.secretNext); err != nil {
			return err
		}
	}
	for _, s := range []string{c.secret, c.secretNext} {
		id, err := cluster.SecretID(s)
		if err != nil {
			return err
		}
		c.secretIDs = append(c.secretIDs, id)
	}
	return nil
}
