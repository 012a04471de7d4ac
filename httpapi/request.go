package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi/schema"
)

// writeJSON answers with a JSON body, in json.dumps' bytes (pyjson.go).
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := pyJSON(v)
	if err != nil {
		panic(err) // a bug: every answer is made of encodable values
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// writeNoContent answers 204.
func writeNoContent(w http.ResponseWriter) {
	w.Header().Del("Content-Type")
	w.WriteHeader(http.StatusNoContent)
}

// httpTime is the Last-Modified format.
func httpTime(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// setLastModified sets Last-Modified and Cache-Control from 1.15 on. A zero
// t (standard classes and traits, which have no timestamps) means now, as
// upstream does.
func setLastModified(w http.ResponseWriter, r *http.Request, t time.Time) {
	if !versionOf(r).AtLeast(15) {
		return
	}
	if t.IsZero() {
		t = time.Now()
	}
	w.Header().Set("Last-Modified", httpTime(t))
	w.Header().Set("Cache-Control", "no-cache")
}

// latest returns the later of two times.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// read runs fn over the state to answer r from: a version as fresh as the
// request's read options say (Backend). On failure it has answered the
// request and returns false.
func (s *Server) read(w http.ResponseWriter, r *http.Request, fn func(st *state.Store)) bool {
	st, ok := s.version(w, r)
	if ok {
		fn(st)
	}
	return ok
}

// version is the state to answer r from, which never changes: a handler
// may keep what it finds there without copying. On failure it has
// answered the request and returns false.
func (s *Server) version(w http.ResponseWriter, r *http.Request) (*state.Store, bool) {
	st, err := s.backend.Read(r.Context(), infoOf(r).read)
	if err != nil {
		if !s.aborted(w, r, err) {
			writeStateError(w, r, err)
		}
		return nil, false
	}
	return st, true
}

// apply proposes cmd through Raft. On failure (a rejection by the state or
// a cluster error) it has answered the request and returns false.
func (s *Server) apply(w http.ResponseWriter, r *http.Request, cmd state.Command) (any, bool) {
	v, err := s.backend.Apply(r.Context(), cmd)
	if err != nil {
		if !s.aborted(w, r, err) {
			writeStateError(w, r, err)
		}
		return nil, false
	}
	return v, true
}

// requireJSON answers 415 unless the request body is declared JSON, as
// upstream's require_content('application/json') with webob's reading of
// the content type: everything before the first ";", as sent.
func requireJSON(w http.ResponseWriter, r *http.Request) bool {
	ct := strings.Join(r.Header.Values("Content-Type"), ",")
	mt, _, _ := strings.Cut(ct, ";")
	if mt == "application/json" {
		return true
	}
	if mt == "" {
		// webob shows an unset content type as None, and upstream stores
		// that in the request (webob's 415 body repeats it).
		mt = "None"
		r.Header.Set("Content-Type", mt)
	}
	writeError(w, r, http.StatusUnsupportedMediaType,
		"The media type "+mt+" is not supported, use application/json", "")
	return false
}

// decodeBody reads a JSON body, validates it against sch and decodes it
// into dst; a *schema.Doc receives the document validated, decoded once.
// Decoding takes the body's share of Config.MaxBodyDecodeBytes once the
// body is read. On failure it has answered 400 (or 408/413/415, or 503 when no
// slot came free) and returns false.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, sch *schema.Schema, dst any) bool {
	if !requireJSON(w, r) {
		return false
	}
	body, err := readBody(r.Body, r.ContentLength)
	if err != nil {
		answerReadError(w, r, err)
		return false
	}
	release, ok := s.admit(w, r, s.bodySlots, AdmitBody, max(int64(len(body)), MinBodyWeight))
	if !ok {
		return false
	}
	defer release()
	// Each step below is linear in the body (integers past Python's digit
	// limit are refused by the parser's first pass); between them the
	// request's deadline and its client are checked.
	if s.aborted(w, r, r.Context().Err()) {
		return false
	}
	var doc schema.Doc
	if sch == nil {
		doc, err = schema.DecodeDoc(body)
	} else {
		// ValidateDoc keeps the document's key order, which upstream's
		// messages depend on.
		doc, err = sch.ValidateDoc(body)
	}
	var malformed *schema.DecodeError
	switch {
	case errors.As(err, &malformed):
		writeError(w, r, http.StatusBadRequest, "Malformed JSON: "+err.Error(), "")
		return false
	case err != nil:
		writeError(w, r, http.StatusBadRequest, "JSON does not validate: "+err.Error(), "")
		return false
	case doc.NonFinite():
		// Python's json reads NaN and Infinity, and a NaN
		// allocation_ratio passes upstream's schema to fail later with a
		// 500; placementd refuses it here.
		writeError(w, r, http.StatusBadRequest, "Malformed JSON: Out of range float values are not JSON compliant", "")
		return false
	}
	if s.aborted(w, r, r.Context().Err()) {
		return false
	}
	if d, ok := dst.(*schema.Doc); ok {
		*d = doc
	} else if dst != nil {
		if err := json.Unmarshal(body, dst); err != nil {
			writeBodyShapeError(w, r, err)
			return false
		}
	}
	return true
}

// answerReadError answers a request whose body could not be read: 413
// past http.MaxBytesReader's bound, 408 when the server's read timeout
// cut it (the client announced more than it sent in time), 400 otherwise.
func answerReadError(w http.ResponseWriter, r *http.Request, err error) {
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooBig):
		writeError(w, r, http.StatusRequestEntityTooLarge, "Request body too large", "")
	case errors.As(err, &ne) && ne.Timeout():
		w.Header().Set("Connection", "close")
		writeError(w, r, http.StatusRequestTimeout, "The request body was not received in time.", "")
	default:
		writeError(w, r, http.StatusBadRequest, "Malformed JSON: "+err.Error(), "")
	}
}

// readBody reads a request body (bounded by checkContentHeaders'
// http.MaxBytesReader, or by ReadForwarded) into one buffer, growing it
// only as data arrives, up to the announced length (Content-Length, -1
// when unknown) exactly: a client that announces 16 MiB and sends nothing
// costs nothing, and a complete body is held once, not in the spare
// capacity and the copies of repeated appends.
func readBody(body io.Reader, announced int64) ([]byte, error) {
	const first = 64 << 10
	size := int64(first)
	if announced >= 0 && announced < size {
		size = announced + 1 // room to see the end of the body
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			// Doubling, and the announced length at once when half of it
			// has come: the buffers made add up to twice the body.
			next := int64(cap(buf)) * 2
			if announced > 0 && next > announced/2 {
				next = announced + 1
			}
			buf = append(make([]byte, 0, next), buf...)
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// writeBodyShapeError answers a validated body that does not decode into
// the handler's types: a value of a kind the schema leaves open (a key
// outside its patterns) that the handler cannot use. Upstream fails on
// these with 500.
func writeBodyShapeError(w http.ResponseWriter, r *http.Request, err error) {
	var te *json.UnmarshalTypeError
	var se *shapeError
	switch {
	case errors.As(err, &se):
		te, err = se.err, se.err
		if te.Field == "" {
			te.Field = se.key
		} else {
			te.Field = se.key + "." + te.Field
		}
	case !errors.As(err, &te):
		writeError(w, r, http.StatusBadRequest, "Malformed JSON: "+err.Error(), "")
		return
	}
	want := map[reflect.Kind]string{reflect.Map: "an object", reflect.Struct: "an object", reflect.Slice: "an array",
		reflect.String: "a string", reflect.Int64: "an integer", reflect.Float64: "a number", reflect.Bool: "a boolean"}[te.Type.Kind()]
	if want == "" {
		want = "of another type"
	}
	where := ""
	if te.Field != "" {
		where = fmt.Sprintf(" at '%s'", te.Field)
	}
	writeError(w, r, http.StatusBadRequest, fmt.Sprintf("JSON does not validate: the %s%s should be %s", te.Value, where, want), "")
}

// shapeError is a value of an object, under key, that did not decode.
type shapeError struct {
	key string
	err *json.UnmarshalTypeError
}

func (e *shapeError) Error() string { return e.key + ": " + e.err.Error() }

// decodeEach decodes each value of the JSON object raw into a new T,
// naming the key of one that does not decode (see writeBodyShapeError).
func decodeEach[T any](raw json.RawMessage) (map[string]T, error) {
	var values map[string]json.RawMessage
	if err := json.Unmarshal(raw, &values); err != nil {
		return nil, err
	}
	out := make(map[string]T, len(values))
	for k, v := range values {
		var t T
		if err := json.Unmarshal(v, &t); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, &shapeError{k, te}
			}
			return nil, err
		}
		out[k] = t
	}
	return out, nil
}

var zeroTime time.Time

// queryPair is one key=value of a query string.
type queryPair struct{ Key, Value string }

// queryPairs is the query string's pairs in order. The caller must not
// change the slice.
func queryPairs(r *http.Request) []queryPair { return queryOf(r).pairs }

// parsedQuery is a query string split once: its pairs in order, as
// Python's parse_qsl with keep_blank_values does (only "&" separates; a
// bad escape is kept as is), and the values of each key in order.
type parsedQuery struct {
	raw    string
	pairs  []queryPair
	values map[string][]string
}

// queryOf returns the request's query, split on the first call and kept
// in the request's info for the others (handlers read it once per
// parameter, and a query can repeat one ten thousand times).
func queryOf(r *http.Request) *parsedQuery {
	info, ok := r.Context().Value(infoKey{}).(*reqInfo)
	if ok && info.query != nil && info.query.raw == r.URL.RawQuery {
		return info.query
	}
	q := &parsedQuery{raw: r.URL.RawQuery, values: map[string][]string{}}
	for _, part := range strings.Split(r.URL.RawQuery, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		p := queryPair{unescapeQuery(k), unescapeQuery(v)}
		q.pairs = append(q.pairs, p)
		q.values[p.Key] = append(q.values[p.Key], p.Value)
	}
	if ok {
		info.query = q
	}
	return q
}

func unescapeQuery(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return strings.ReplaceAll(s, "+", " ")
}

// validateQuery is upstream's util.validate_query_params: the query as a
// dict (each key once, at its first position, with its last value) is
// validated against sch. On failure it has answered 400 and returns false.
func validateQuery(w http.ResponseWriter, r *http.Request, sch *schema.Schema) bool {
	var keys []string
	last := map[string]string{}
	for _, p := range queryPairs(r) {
		if _, seen := last[p.Key]; !seen {
			keys = append(keys, p.Key)
		}
		last[p.Key] = p.Value
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kj, _ := json.Marshal(k)
		vj, _ := json.Marshal(last[k])
		b.Write(kj)
		b.WriteByte(':')
		b.Write(vj)
	}
	b.WriteByte('}')
	if _, err := sch.ValidateJSON([]byte(b.String())); err != nil {
		writeError(w, r, http.StatusBadRequest, "Invalid query string parameters: "+err.Error(), "")
		return false
	}
	return true
}

// checkAccept is upstream's util.check_accept('application/json'): an
// Accept header that rules out JSON gets 406. A header webob cannot parse
// counts as absent. On failure it has answered and returns false.
func checkAccept(w http.ResponseWriter, r *http.Request) bool {
	h, present := acceptHeader(r.Header)
	if !present || acceptsJSON(h) {
		return true
	}
	writeError(w, r, http.StatusNotAcceptable, "Only application/json is provided", "")
	return false
}

// acceptsJSON reports whether webob finds application/json acceptable
// under the Accept header h, or the header malformed (then webob ignores
// it).
func acceptsJSON(h string) bool {
	ranges, valid := parseAccept(h)
	return !valid || len(acceptableOffers(ranges, true, []string{"application/json"})) > 0
}
