package httpapi

import "net/http"

// unauthorizedWhy says, for the request log of a 401, what the request
// lacked: upstream's 401 bodies (webob's "...the browser...", Keystone's
// "requires authentication") are kept as they are, since clients compare
// them, so the server's log is where an operator learns which header was
// missing.
func unauthorizedWhy(h http.Header) string {
	_, user := envHeader(h, "HTTP_X_AUTH_TOKEN")
	if !user {
		_, user = envHeader(h, "HTTP_X_STORAGE_TOKEN")
	}
	if !user {
		return "the request has no X-Auth-Token header"
	}
	return "the X-Auth-Token was refused"
}
