package httpapi

import (
	"net/http"
	"strings"
)

// CORS as oslo.middleware's CORS middleware does it with the defaults
// Placement's WSGI application sets (placement/wsgi's
// _set_middleware_defaults).
var (
	corsDefaultAllowHeaders = []string{"X-Auth-Token", "X-Openstack-Request-Id", "X-Identity-Status",
		"X-Roles", "X-Service-Catalog", "X-User-Id", "X-Tenant-Id", "OpenStack-API-Version"}
	corsExposeHeaders = []string{"X-Auth-Token", "X-Openstack-Request-Id", "X-Subject-Token",
		"X-Service-Token", "OpenStack-API-Version"}
	corsAllowMethods = []string{"GET", "PUT", "POST", "DELETE", "PATCH"}
	// corsSimpleHeaders may always be requested.
	corsSimpleHeaders = []string{"Accept", "Accept-Language", "Content-Type", "Cache-Control",
		"Content-Language", "Expires", "Last-Modified", "Pragma"}
)

const corsMaxAge = "3600"

type corsConfig struct {
	origins      map[string]bool
	allowHeaders map[string]bool // upper case, simple headers included
}

// corsMiddleware answers preflight (OPTIONS) requests itself and adds the
// CORS headers to the responses of allowed origins. It sits outside
// authentication, so preflights need no token.
func corsMiddleware(origins, headers []string, next http.Handler) http.Handler {
	c := &corsConfig{origins: map[string]bool{}, allowHeaders: map[string]bool{}}
	for _, o := range origins {
		c.origins[o] = true
	}
	if len(headers) == 0 {
		headers = corsDefaultAllowHeaders
	}
	for _, h := range append(append([]string(nil), headers...), corsSimpleHeaders...) {
		c.allowHeaders[strings.ToUpper(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			// Upstream lets the application answer OPTIONS and replaces
			// its answer, always an error since no route has OPTIONS, with
			// an empty 200.
			c.preflight(w.Header(), r)
			w.WriteHeader(http.StatusOK)
			return
		}
		if rec, ok := w.(*recorder); ok {
			prev := rec.beforeWrite
			rec.beforeWrite = func(status int, h http.Header) {
				if prev != nil {
					prev(status, h)
				}
				c.simple(h, r)
			}
		} else {
			c.simple(w.Header(), r)
		}
		next.ServeHTTP(w, r)
	})
}

// origin returns the configured origin matching the request's Origin.
func (c *corsConfig) origin(r *http.Request) (string, bool) {
	o, ok := r.Header["Origin"]
	if !ok {
		return "", false
	}
	origin := strings.Join(o, ",")
	if c.origins[origin] {
		return origin, true
	}
	if c.origins["*"] {
		return "*", true
	}
	return "", false
}

// splitHeaderValues is _split_header_values: comma-separated, trimmed,
// empty items dropped.
func splitHeaderValues(r *http.Request, name string) []string {
	var out []string
	for _, v := range strings.Split(strings.Join(r.Header.Values(name), ","), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// preflight is _apply_cors_preflight_headers.
func (c *corsConfig) preflight(h http.Header, r *http.Request) {
	origin, ok := c.origin(r)
	if !ok {
		return
	}
	methods, ok := r.Header["Access-Control-Request-Method"]
	if !ok {
		return
	}
	method := strings.Join(methods, ",")
	allowed := false
	for _, m := range corsAllowMethods {
		allowed = allowed || m == method
	}
	if !allowed {
		return
	}
	requested := splitHeaderValues(r, "Access-Control-Request-Headers")
	for _, rh := range requested {
		if !c.allowHeaders[strings.ToUpper(rh)] {
			return
		}
	}
	h.Set("Vary", "Origin")
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Max-Age", corsMaxAge)
	h.Set("Access-Control-Allow-Methods", method)
	if len(requested) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(requested, ","))
	}
}

// simple is _apply_cors_request_headers, applied to the response as it
// goes out.
func (c *corsConfig) simple(h http.Header, r *http.Request) {
	origin, ok := c.origin(r)
	if !ok {
		return
	}
	if vary := h.Values("Vary"); len(vary) > 0 {
		h.Set("Vary", vary[len(vary)-1]+",Origin")
	} else {
		h.Set("Vary", "Origin")
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Expose-Headers", strings.Join(corsExposeHeaders, ","))
}
