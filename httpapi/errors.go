package httpapi

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"

	"github.com/placementd/placementd/cluster/backend"
	"github.com/placementd/placementd/fsm/state"
)

// Upstream's errors are webob HTTPExceptions rendered by webob: the body is
// a template filled with webob's fixed explanation of the status, the
// detail the handler gave, and (for some statuses) request values; it comes
// out as HTML, JSON or plain text depending on the Accept header, and the
// JSON form is Placement's json_error_formatter applied to the plain text.

// webobStatus is what webob knows about one error status.
type webobStatus struct {
	title       string
	explanation string
	// template replaces webob's default body template; it reads request
	// values (${REQUEST_METHOD}, ${HTTP_ACCEPT}, ${CONTENT_TYPE}).
	template string
}

const defaultBodyTemplate = "${explanation}<br /><br />\n${detail}\n${html_comment}\n"

// webobStatuses holds webob's titles and explanations (whitespace
// normalised, as webob does at import) for the statuses placementd uses.
var webobStatuses = map[int]webobStatus{
	400: {title: "Bad Request", explanation: "The server could not comply with the request since it is either malformed or otherwise incorrect."},
	401: {title: "Unauthorized", explanation: "This server could not verify that you are authorized to access the document you requested. Either you supplied the wrong credentials (e.g., bad password), or your browser does not understand how to supply the credentials required."},
	403: {title: "Forbidden", explanation: "Access was denied to this resource."},
	404: {title: "Not Found", explanation: "The resource could not be found."},
	405: {title: "Method Not Allowed", template: "The method ${REQUEST_METHOD} is not allowed for this resource. <br /><br />\n${detail}"},
	406: {title: "Not Acceptable", template: "The resource could not be generated that was acceptable to your browser\n(content of type ${HTTP_ACCEPT}. <br /><br />\n${detail}"},
	408: {title: "Request Timeout", explanation: "The server has waited too long for the request to be sent by the client."},
	409: {title: "Conflict", explanation: "There was a conflict when trying to complete your request."},
	413: {title: "Request Entity Too Large", explanation: "The body of your request was too large for this server."},
	415: {title: "Unsupported Media Type", template: "The request media type ${CONTENT_TYPE} is not supported by this server.\n<br /><br />\n${detail}"},
	500: {title: "Internal Server Error", explanation: "The server has either erred or is incapable of performing the requested operation."},
	501: {title: "Not Implemented", template: "\nThe request method ${REQUEST_METHOD} is not implemented for this server. <br /><br />\n${detail}"},
	503: {title: "Service Unavailable", explanation: "The server is currently unavailable. Please try again at a later time."},
}

func statusInfo(status int) webobStatus {
	if st, ok := webobStatuses[status]; ok {
		return st
	}
	return webobStatus{title: http.StatusText(status)}
}

// errorFormat selects webob's rendering of an error.
type errorFormat int

const (
	formatPlacementJSON errorFormat = iota // json_error_formatter
	formatWebobJSON                        // webob's own JSON (no formatter given)
)

type errorBody struct {
	Errors []errorItem `json:"errors"`
}

// errorItem keeps json_error_formatter's key order.
type errorItem struct {
	Status     int    `json:"status"`
	Title      string `json:"title"`
	Detail     string `json:"detail"`
	Code       string `json:"code,omitempty"`
	RequestID  string `json:"request_id,omitempty"`
	MaxVersion string `json:"max_version,omitempty"`
	MinVersion string `json:"min_version,omitempty"`
}

// writeError answers in Placement's error format. code is the Placement
// error code (shown from 1.23; default placement.undefined_code).
func writeError(w http.ResponseWriter, r *http.Request, status int, detail, code string) {
	renderError(w, r, status, detail, code, formatPlacementJSON)
}

// writeRaisedError answers with an error that upstream raises out of its
// handlers instead of returning it (unknown route, missing content type,
// policy refusal): the microversion middleware then adds its version header
// but not Vary.
func writeRaisedError(w http.ResponseWriter, r *http.Request, status int, detail, code string) {
	w.Header().Del("Vary")
	writeError(w, r, status, detail, code)
}

// renderError writes a webob-style error response.
func renderError(w http.ResponseWriter, r *http.Request, status int, detail, code string, format errorFormat) {
	st := statusInfo(status)
	statusLine := fmt.Sprintf("%d %s", status, st.title)
	info := infoOf(r)

	var ctype string
	var body []byte
	rendering := negotiateErrorType(r)
	if r.Method == http.MethodHead {
		// webob sends an error to a HEAD request without rendering it:
		// a bare Response, whose content type is its default.
		rendering = "head"
	}
	switch rendering {
	case "head":
		ctype = "text/html; charset=UTF-8"
	case "text/html":
		ctype = "text/html; charset=UTF-8"
		body = []byte("<html>\n <head>\n  <title>" + statusLine + "</title>\n </head>\n <body>\n  <h1>" +
			statusLine + "</h1>\n  " + errorBodyText(r, st, detail, htmlEscape) + "\n </body>\n</html>")
	case "application/json":
		ctype = "application/json"
		raw := errorBodyText(r, st, detail, noEscape)
		var v any
		if format == formatWebobJSON {
			v = struct {
				Message string `json:"message"`
				Code    string `json:"code"`
				Title   string `json:"title"`
			}{raw, statusLine, st.title}
		} else {
			item := errorItem{Status: status, Title: st.title, Detail: stripTags(raw)}
			if info.version != nil && info.version.AtLeast(23) {
				if code == "" {
					code = state.CodeDefault
				}
				item.Code = code
			}
			item.RequestID = info.id
			// A 406 before the version is known is the microversion
			// middleware refusing the request's version: say which exist.
			if status == http.StatusNotAcceptable && info.version == nil {
				item.MaxVersion, item.MinVersion = MaxVersion.String(), MinVersion.String()
			}
			v = errorBody{Errors: []errorItem{item}}
		}
		body, _ = pyJSON(v)
	default:
		ctype = "text/plain; charset=UTF-8"
		body = []byte(statusLine + "\n\n" + stripTags(errorBodyText(r, st, detail, noEscape)))
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Del("Last-Modified")
	h.Del("Cache-Control")
	h.Del("Content-Length")
	w.WriteHeader(status)
	w.Write(body)
}

// negotiateErrorType is webob's choice between HTML, JSON and plain text.
func negotiateErrorType(r *http.Request) string {
	h, _ := acceptHeader(r.Header)
	ranges, valid := parseAccept(h)
	if offers := acceptableOffers(ranges, valid, []string{"text/html", "application/json"}); len(offers) > 0 {
		return offers[0]
	}
	return "text/plain"
}

func noEscape(s string) string { return s }

// htmlEscape is webob's html_escape: quotes escaped, non-ASCII as character
// references.
func htmlEscape(s string) string {
	s = html.EscapeString(s)
	s = strings.ReplaceAll(s, "&#39;", "&#x27;")
	s = strings.ReplaceAll(s, "&#34;", "&quot;")
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "&#%d;", r)
		}
	}
	return b.String()
}

// errorBodyText fills the status's body template (Python's
// Template.safe_substitute: unknown names stay as they are).
func errorBodyText(r *http.Request, st webobStatus, detail string, escape func(string) string) string {
	tmpl := st.template
	if tmpl == "" {
		tmpl = defaultBodyTemplate
	}
	vars := map[string]string{
		"explanation":  escape(st.explanation),
		"detail":       escape(detail),
		"comment":      "",
		"html_comment": "",
	}
	if st.template != "" {
		// Custom templates may read the WSGI environ.
		vars["REQUEST_METHOD"] = escape(r.Method)
		if v, ok := acceptHeader(r.Header); ok {
			vars["HTTP_ACCEPT"] = escape(v)
		}
		if v, ok := r.Header["Content-Type"]; ok {
			vars["CONTENT_TYPE"] = escape(strings.Join(v, ","))
		}
	}
	var b strings.Builder
	for {
		i := strings.Index(tmpl, "${")
		if i < 0 {
			b.WriteString(tmpl)
			break
		}
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			b.WriteString(tmpl)
			break
		}
		b.WriteString(tmpl[:i])
		if v, ok := vars[tmpl[i+2:i+j]]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(tmpl[i : i+j+1])
		}
		tmpl = tmpl[i+j+1:]
	}
	return b.String()
}

// stripTags is webob's strip_tags: newlines become spaces, <br> tags
// newlines, and other tags and comment marks vanish.
func stripTags(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "\r", "")
	s = brTagRE.ReplaceAllString(s, "\n")
	s = commentRE.ReplaceAllString(s, "")
	return tagRE.ReplaceAllString(s, "")
}

var (
	brTagRE   = regexp.MustCompile(`(?is)<br.*?>`)
	commentRE = regexp.MustCompile(`<!--|-->`)
	tagRE     = regexp.MustCompile(`(?s)<.*?>`)
)

// writeStateError maps an error from the cluster or the state to a
// response: a *state.Error by its kind (raised, without Vary, when it is
// one upstream's handlers let escape), a write of unknown outcome or a
// missing leader as 503 with Retry-After.
func writeStateError(w http.ResponseWriter, r *http.Request, err error) {
	var se *state.Error
	switch {
	case errors.As(err, &se):
		status := http.StatusBadRequest
		switch se.Kind {
		case state.NotFound:
			status = http.StatusNotFound
		case state.Conflict:
			status = http.StatusConflict
		}
		if se.Uncaught {
			writeRaisedError(w, r, status, se.Detail, se.Code)
			return
		}
		writeError(w, r, status, se.Detail, se.Code)
	case errors.Is(err, backend.ErrUnknownOutcome), errors.Is(err, backend.ErrNotLeader):
		w.Header().Set("Retry-After", "1")
		if errors.Is(err, backend.ErrNotLeader) {
			w.Header().Set(backend.NotAppliedHeader, "true")
		}
		writeError(w, r, http.StatusServiceUnavailable, err.Error(), "")
	default:
		// Upstream's FaultWrapper answers unexpected errors, outside the
		// microversion middleware.
		w.Header().Del(versionHeader)
		w.Header().Del("Vary")
		writeError(w, r, http.StatusInternalServerError, err.Error(), "")
	}
}
