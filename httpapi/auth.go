package httpapi

import (
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/placementd/placementd/httpapi/policy"
)

// Credentials are who a request acts as, as oslo.context derives them (the
// policy engine's view of a request).
type Credentials = policy.Credentials

// credentialsOf is the caller's credentials, as authentication set them in
// the request's info.
func credentialsOf(r *http.Request) Credentials {
	if i, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		return i.creds
	}
	return Credentials{}
}

// envHeader is a request header as the WSGI environ holds it: every header
// whose name maps to key (upper case, "-" as "_", e.g. X_USER_ID) joined
// with ",". ok is false when there is none.
func envHeader(h http.Header, key string) (string, bool) {
	var names []string
	for name := range h {
		if isEnvKey(name, key) {
			names = append(names, name)
		}
	}
	return joinHeaders(h, names)
}

// joinHeaders joins the values of names (in sorted order, so that the
// result does not depend on map order) with ",".
func joinHeaders(h http.Header, names []string) (string, bool) {
	switch len(names) {
	case 0:
		return "", false
	case 1:
		return strings.Join(h[names[0]], ","), true
	}
	sort.Strings(names)
	var vals []string
	for _, n := range names {
		vals = append(vals, h[n]...)
	}
	return strings.Join(vals, ","), true
}

// headerEnv is every header as envHeader gives it, computed in one pass
// over the headers: what contextFromHeaders reads a dozen keys of on every
// request.
func headerEnv(h http.Header) map[string]string {
	names := make(map[string][]string, len(h))
	for name := range h {
		k := envKey(name)
		names[k] = append(names[k], name)
	}
	env := make(map[string]string, len(names))
	for k, ns := range names {
		env[k], _ = joinHeaders(h, ns)
	}
	return env
}

// envKey is the WSGI environ key of a header name.
func envKey(name string) string {
	b := make([]byte, 0, len("HTTP_")+len(name))
	b = append(b, "HTTP_"...)
	for i := 0; i < len(name); i++ {
		c, ok := envByte(name[i])
		if !ok {
			// Non-ASCII: Unicode upper-casing, as before.
			return "HTTP_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		}
		b = append(b, c)
	}
	return string(b)
}

// envByte is what byte c of a header name becomes in its environ key;
// false for a non-ASCII byte (the name is then upper-cased as Unicode).
func envByte(c byte) (byte, bool) {
	switch {
	case c == '-':
		return '_', true
	case 'a' <= c && c <= 'z':
		return c - ('a' - 'A'), true
	}
	return c, c < 0x80
}

// isEnvKey reports whether envKey(name) == key without building the key
// (the auth middleware looks several keys up among every header of each
// request).
func isEnvKey(name, key string) bool {
	if !isASCII(name) {
		return envKey(name) == key // Unicode upper-casing
	}
	rest, ok := strings.CutPrefix(key, "HTTP_")
	if !ok || len(rest) != len(name) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c, _ := envByte(name[i]); c != rest[i] {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// setEnvHeader replaces every header that maps to key with one value, as
// webob's req.headers[key] = value does.
func setEnvHeader(h http.Header, key, value string) {
	for name := range h {
		if isEnvKey(name, key) {
			delete(h, name)
		}
	}
	h.Set(strings.ReplaceAll(strings.TrimPrefix(key, "HTTP_"), "_", "-"), value)
}

// authenticate is upstream's NoAuthMiddleware followed by
// PlacementKeystoneContext: every path but / needs an X-Auth-Token,
// "user[:project]"; roles come from X-Roles, or are admin for the user
// admin. The credentials are then read from the headers as oslo.context's
// RequestContext.from_environ reads them.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			token, ok := envHeader(r.Header, "HTTP_X_AUTH_TOKEN")
			if !ok {
				// webob's HTTPUnauthorized without Placement's formatter.
				renderError(w, r, http.StatusUnauthorized, "", "", formatWebobJSON)
				return
			}
			user, project, _ := strings.Cut(token, ":")
			if project == "" {
				project = user
			}
			var roles []string
			if rh, ok := envHeader(r.Header, "HTTP_X_ROLES"); ok {
				roles = strings.Split(rh, ",")
			} else if user == "admin" {
				roles = []string{"admin"}
			}
			setEnvHeader(r.Header, "HTTP_X_USER_ID", user)
			if sc, _ := envHeader(r.Header, "HTTP_OPENSTACK_SYSTEM_SCOPE"); sc == "" {
				setEnvHeader(r.Header, "HTTP_X_TENANT_ID", project)
			}
			setEnvHeader(r.Header, "HTTP_X_ROLES", strings.Join(roles, ","))
		}
		c := contextFromHeaders(r.Header)
		infoOf(r).creds = c
		next.ServeHTTP(w, r)
	})
}

// contextFromHeaders is oslo.context's from_environ.
func contextFromHeaders(h http.Header) Credentials {
	env := headerEnv(h)
	first := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := env[k]; ok {
				return v
			}
		}
		return ""
	}
	list := func(keys ...string) []string {
		v := first(keys...)
		if v == "" {
			return nil
		}
		out := strings.Split(v, ",")
		for i := range out {
			out[i] = strings.TrimSpace(out[i])
		}
		return out
	}
	isAdminProject := "true"
	if v, ok := env["HTTP_X_IS_ADMIN_PROJECT"]; ok {
		isAdminProject = v
	}
	return Credentials{
		UserID:                 first("HTTP_X_USER_ID", "HTTP_X_USER"),
		UserDomainID:           first("HTTP_X_USER_DOMAIN_ID"),
		ProjectID:              first("HTTP_X_PROJECT_ID", "HTTP_X_TENANT_ID", "HTTP_X_TENANT"),
		ProjectDomainID:        first("HTTP_X_PROJECT_DOMAIN_ID"),
		DomainID:               first("HTTP_X_DOMAIN_ID"),
		SystemScope:            first("HTTP_OPENSTACK_SYSTEM_SCOPE"),
		Roles:                  list("HTTP_X_ROLES", "HTTP_X_ROLE"),
		IsAdminProject:         strings.ToLower(isAdminProject) == "true",
		ServiceUserID:          first("HTTP_X_SERVICE_USER_ID"),
		ServiceUserDomainID:    first("HTTP_X_SERVICE_USER_DOMAIN_ID"),
		ServiceProjectID:       first("HTTP_X_SERVICE_PROJECT_ID"),
		ServiceProjectDomainID: first("HTTP_X_SERVICE_PROJECT_DOMAIN_ID"),
		ServiceRoles:           list("HTTP_X_SERVICE_ROLES"),
	}
}

// authorize checks a policy rule; on refusal it answers 403 and returns
// false. target nil means the caller's own project and user.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, rule string, target map[string]string) bool {
	if s.cfg.Authorizer == nil {
		return true
	}
	c := credentialsOf(r)
	if target == nil {
		target = policy.DefaultTarget(c)
	}
	err := s.cfg.Authorizer.Authorize(rule, c, target)
	if err == nil {
		return true
	}
	var forbidden *policy.Forbidden
	if errors.As(err, &forbidden) {
		// Upstream's PolicyNotAuthorized is raised past the microversion
		// middleware.
		writeRaisedError(w, r, http.StatusForbidden, err.Error(), "")
		return false
	}
	// Anything else (an unregistered rule) is a bug: upstream's
	// FaultWrapper answers it, without microversion headers.
	s.cfg.Logger.Error("policy check failed", "rule", rule, "error", err, "request_id", infoOf(r).id)
	w.Header().Del(versionHeader)
	w.Header().Del("Vary")
	writeError(w, r, http.StatusInternalServerError, err.Error(), "")
	return false
}
