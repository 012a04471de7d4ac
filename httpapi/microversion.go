package httpapi

import (
	"fmt"
	"net/http"
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

// versionOf is the microversion negotiated for r (kept in its info).
func versionOf(r *http.Request) Version {
	if i, ok := r.Context().Value(infoKey{}).(*reqInfo); ok && i.version != nil {
		return *i.version
	}
	return MinVersion
}

// versionHeader is the one header microversion_parse reads (upstream's
// extract_version ignores the legacy X-OpenStack-Placement-API-Version).
const versionHeader = "openstack-api-version"

// requestedVersion reads the version a client asked for as
// microversion_parse does: the header's comma-separated "<service>
// <version>" entries are scanned from the last, and the first whose service
// is "placement" wins. Header bytes are Latin-1, as in the WSGI environ.
func requestedVersion(r *http.Request) (string, bool) {
	vals, ok := r.Header[http.CanonicalHeaderKey(versionHeader)]
	if !ok {
		return "", false
	}
	entries := strings.Split(strings.Join(vals, ","), ",")
	for i := len(entries) - 1; i >= 0; i-- {
		service, version, ok := pySplitOnce(pyStrip(entries[i]))
		if ok && asciiLower(service) == "placement" {
			if v := pyStrip(version); v != "" {
				return v, true
			}
		}
	}
	return "", false
}

// parseVersion is microversion_parse's parse_version_string followed by its
// check that the version is one of ours: a malformed string is a
// TypeError (400), an unknown version a ValueError (406).
func parseVersion(s string) (v Version, malformed, unknown string) {
	if s == "latest" {
		return MaxVersion, "", ""
	}
	parts := strings.SplitN(s, ".", 2)
	nums := make([]string, len(parts))
	for i, p := range parts {
		n, ok := pyInt(p)
		if !ok {
			return v, fmt.Sprintf("invalid version string: %s; invalid literal for int() with base 10: %s",
				latin1(s), pyReprLatin1(p)), ""
		}
		nums[i] = n
	}
	if len(nums) == 1 {
		return v, fmt.Sprintf("invalid version string: %s; Version.__new__() missing 1 required positional argument: 'minor'",
			latin1(s)), ""
	}
	for minor := MinVersion.Minor; minor <= MaxVersion.Minor; minor++ {
		if nums[0] == "1" && nums[1] == fmt.Sprint(minor) {
			return Version{1, minor}, "", ""
		}
	}
	return v, "", "Unacceptable version header: " + latin1(s)
}

// negotiateVersion is microversion_parse's MicroversionMiddleware: it fixes
// the request's version or answers 400/406 (without version headers), and
// stamps the version headers on the response.
func negotiateVersion(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := MinVersion
		if s, ok := requestedVersion(r); ok {
			var malformed, unknown string
			v, malformed, unknown = parseVersion(s)
			switch {
			case malformed != "":
				writeError(w, r, http.StatusBadRequest, "Invalid microversion: "+malformed, "")
				return
			case unknown != "":
				writeError(w, r, http.StatusNotAcceptable, "Invalid microversion: "+unknown, "")
				return
			}
		}
		infoOf(r).version = &v
		h := w.Header()
		h.Add(versionHeader, "placement "+v.String())
		// Responses raised rather than returned by upstream's handlers lose
		// this again (writeRaisedError).
		h.Add("Vary", versionHeader)
		next.ServeHTTP(w, r)
	})
}

// isPySpace reports whether the Latin-1 character c is whitespace to
// Python's str.split and str.strip.
func isPySpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0:
		return true
	}
	return false
}

func pyStrip(s string) string {
	i, j := 0, len(s)
	for i < j && isPySpace(s[i]) {
		i++
	}
	for j > i && isPySpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

// pySplitOnce is s.split(None, 1) on a stripped string when it gives two
// parts.
func pySplitOnce(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if isPySpace(s[i]) {
			rest := s[i:]
			for len(rest) > 0 && isPySpace(rest[0]) {
				rest = rest[1:]
			}
			return s[:i], rest, rest != ""
		}
	}
	return s, "", false
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// pyInt parses s as Python's int(s) does for base 10 (surrounding
// whitespace, a sign, underscores between digits) and returns the value's
// canonical decimal form.
func pyInt(s string) (string, bool) {
	s = pyStrip(s)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return "", false
	}
	var digits []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			digits = append(digits, c)
		case c == '_' && i > 0 && i < len(s)-1 && s[i-1] != '_' && s[i+1] >= '0' && s[i+1] <= '9':
		default:
			return "", false
		}
	}
	n := strings.TrimLeft(string(digits), "0")
	if n == "" {
		return "0", true
	}
	if neg {
		n = "-" + n
	}
	return n, true
}

// latin1 turns header bytes into text the way the WSGI environ does.
func latin1(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteRune(rune(s[i]))
	}
	return b.String()
}

// pyReprLatin1 is Python's repr() of the Latin-1 string s.
func pyReprLatin1(s string) string {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == quote || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || (0x7f <= c && c <= 0xa0) || c == 0xad:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteRune(rune(c))
		}
	}
	b.WriteByte(quote)
	return b.String()
}
