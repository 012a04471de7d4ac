package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/placementd/placementd/httpapi/policy"
)

// Credentials are who a request acts as, as oslo.context derives them from
// the identity headers; policy rules are checked against them.
type Credentials = policy.Credentials

type credsKey struct{}

func credentialsOf(r *http.Request) Credentials {
	c, _ := r.Context().Value(credsKey{}).(Credentials)
	return c
}

// authenticate implements noauth2: every path but / needs X-Auth-Token,
// "user[:project]"; roles come from X-Roles, or are admin for user admin.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" || r.URL.Path == "" {
			next.ServeHTTP(w, r)
			return
		}
		token, ok := r.Header["X-Auth-Token"]
		if !ok {
			writeError(w, r, http.StatusUnauthorized, "", "")
			return
		}
		user, project, _ := strings.Cut(strings.Join(token, ","), ":")
		if project == "" {
			project = user
		}
		var roles []string
		if rh, ok := r.Header["X-Roles"]; ok {
			for _, role := range strings.Split(strings.Join(rh, ","), ",") {
				if role = strings.TrimSpace(role); role != "" {
					roles = append(roles, strings.ToLower(role))
				}
			}
		} else if user == "admin" {
			roles = []string{"admin"}
		}
		// oslo.context: the admin-project flag defaults to true.
		c := Credentials{UserID: user, Roles: roles, IsAdminProject: true}
		if scope := r.Header.Get("OpenStack-System-Scope"); scope != "" {
			c.SystemScope = scope
		} else {
			c.ProjectID = project
		}
		// oslo.context reads X-Project-Id over what noauth2 derived.
		if p := r.Header.Get("X-Project-Id"); p != "" {
			c.ProjectID = p
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), credsKey{}, c)))
	})
}

// authorize checks a policy rule; on refusal it answers 403 and returns
// false. target defaults to the caller's own project and user.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, rule string, target map[string]string) bool {
	if s.cfg.Authorizer == nil {
		return true
	}
	c := credentialsOf(r)
	if target == nil {
		target = policy.DefaultTarget(c)
	}
	err := s.cfg.Authorizer.Authorize(rule, c, target)
	var forbidden *policy.Forbidden
	switch {
	case err == nil:
		return true
	case errors.As(err, &forbidden):
		writeError(w, r, http.StatusForbidden, err.Error(), "")
	default:
		// An unregistered rule is a bug in placementd, as upstream's 500.
		writeError(w, r, http.StatusInternalServerError, err.Error(), "")
	}
	return false
}
