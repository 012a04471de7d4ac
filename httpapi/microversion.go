package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// Version is a Placement microversion.
type Version struct{ Major, Minor int }

// MinVersion and MaxVersion bound the microversions placementd serves.
var (
	MinVersion = Version{1, 0}
	MaxVersion = Version{1, 39}
)

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// AtLeast reports whether v is minor or later within major 1.
func (v Version) AtLeast(minor int) bool {
	return v.Major > 1 || (v.Major == 1 && v.Minor >= minor)
}

// Less orders versions.
func (v Version) Less(o Version) bool {
	return v.Major < o.Major || (v.Major == o.Major && v.Minor < o.Minor)
}

type versionKey struct{}

// versionOf is the microversion negotiated for r.
func versionOf(r *http.Request) Version {
	if v, ok := r.Context().Value(versionKey{}).(Version); ok {
		return v
	}
	return MinVersion
}

var versionRE = regexp.MustCompile(`^([1-9]\d*)\.([1-9]\d*|0)$`)

// requestedVersion reads the version a client asked for, as
// microversion_parse does: the OpenStack-API-Version header for the
// placement service, then the legacy X-OpenStack-Placement-API-Version.
func requestedVersion(r *http.Request) (string, bool) {
	for _, h := range r.Header.Values("OpenStack-API-Version") {
		for _, part := range strings.Split(h, ",") {
			fields := strings.Fields(part)
			if len(fields) == 2 && strings.EqualFold(fields[0], "placement") {
				return fields[1], true
			}
		}
	}
	if v := r.Header.Get("X-OpenStack-Placement-API-Version"); v != "" {
		return strings.TrimSpace(v), true
	}
	return "", false
}

// negotiateVersion is the microversion middleware: it fixes the request's
// version or answers 400/406, and stamps the version headers on the
// response.
func negotiateVersion(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := MinVersion
		if s, ok := requestedVersion(r); ok {
			if strings.EqualFold(s, "latest") {
				v = MaxVersion
			} else {
				m := versionRE.FindStringSubmatch(s)
				if m == nil {
					writeError(w, r, http.StatusBadRequest, fmt.Sprintf("invalid version string: %s", s), "")
					return
				}
				major, _ := strconv.Atoi(m[1])
				minor, _ := strconv.Atoi(m[2])
				v = Version{major, minor}
				if v.Less(MinVersion) || MaxVersion.Less(v) {
					writeErrorVersion(w, r, http.StatusNotAcceptable,
						fmt.Sprintf("Unacceptable version header: %s", s), "", v)
					return
				}
			}
		}
		h := w.Header()
		h.Set("OpenStack-API-Version", "placement "+v.String())
		h.Add("Vary", "openstack-api-version")
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), versionKey{}, v)))
	})
}
