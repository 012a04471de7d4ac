package main

import (
	"errors"
	"flag"
	"time"

	"github.com/placementd/placementd/httpapi"
)

// securityFlags are the serve flags about authentication against Keystone
// and TLS.
type securityFlags struct {
	keystone httpapi.KeystoneConfig
	// keystoneCacheTime is token_cache_time; keystoneServiceRoles is
	// comma-separated.
	keystoneCacheTime    time.Duration
	keystoneServiceRoles string
	// apiKeystone is what the API gets: nil unless --auth-strategy keystone.
	apiKeystone *httpapi.KeystoneConfig
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
	fs.DurationVar(&c.keystoneCacheTime, "keystone-token-cache-time", 300*time.Second, "how long a validated token is trusted before Keystone is asked again; a revoked token is refused at the latest this long after revocation; 0 disables the cache ([keystone_authtoken] token_cache_time)")
	fs.StringVar(&c.keystoneServiceRoles, "keystone-service-token-roles", "service", "comma-separated roles that let an X-Service-Token carry an expired user token ([keystone_authtoken] service_token_roles)")
	fs.StringVar(&k.ServiceType, "keystone-service-type", "", "Placement's service type in the catalog (placement), needed to accept application credentials restricted by access rules ([keystone_authtoken] service_type)")
	fs.DurationVar(&k.Timeout, "keystone-timeout", 10*time.Second, "bound on each request to Keystone ([keystone_authtoken] http_connect_timeout)")
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
	k.TokenCacheTime = c.keystoneCacheTime
	if k.TokenCacheTime == 0 {
		k.TokenCacheTime = -1 // no caching (the Config's zero means default)
	}
	k.ServiceTokenRoles = splitList(c.keystoneServiceRoles)
	if k.ServiceTokenRoles == nil {
		k.ServiceTokenRoles = []string{}
	}
	return &k, nil
}
