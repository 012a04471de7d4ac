package httpapi

import (
	"context"
	"net/http"
	"strings"
)

// Credentials are who a request acts as, as oslo.context derives them.
type Credentials struct {
	UserID      string
	ProjectID   string
	Roles       []string
	SystemScope string // "all" for a system-scoped token
}

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
		c := Credentials{UserID: user, Roles: roles}
		if scope := r.Header.Get("OpenStack-System-Scope"); scope != "" {
			c.SystemScope = scope
		} else {
			c.ProjectID = project
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
		target = map[string]string{"project_id": c.ProjectID, "user_id": c.UserID}
	}
	if err := s.cfg.Authorizer.Authorize(rule, c, target); err != nil {
		writeError(w, r, http.StatusForbidden, err.Error(), "")
		return false
	}
	return true
}
