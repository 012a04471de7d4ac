package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/placementd/placementd/fsm/state"
)

// Go's HTTP server refuses a request whose Content-Length is not a number
// before any handler runs, with a bare "400 Bad Request". Upstream answers
// such a request in Placement's error format ("content-length header must
// be an integer"). FixContentLength wraps a listener so that such a header
// reaches the API renamed (badContentLengthHeader); the API then answers
// and closes the connection, since the body cannot be delimited.
//
// The wrapper follows requests on a connection by their Content-Length; on
// a chunked request it stops looking (later requests on that connection
// are passed on untouched).

// FixContentLength wraps l; see above, and clConn.Write for Go's other
// refusals. Serve the API on the result.
func FixContentLength(l net.Listener) net.Listener { return &clListener{l} }

type clListener struct{ net.Listener }

func (l *clListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &clConn{Conn: c}, nil
}

// maxHeaderScan bounds how much of a request head is buffered before the
// wrapper gives up and passes the connection through.
const maxHeaderScan = 1 << 20

type clConn struct {
	net.Conn
	in          []byte // read, not yet examined
	out         []byte // examined, not yet returned
	bodyLeft    int64  // body bytes of the current request still to pass
	passthrough bool
	// bad is set when a Content-Length was renamed: Close drains first.
	// (Read is never called concurrently with itself; Close may be.)
	bad atomic.Bool
	err error
}

func (c *clConn) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		switch {
		case len(c.in) > 0 && (c.passthrough || c.bodyLeft > 0):
			n := int64(len(c.in))
			if !c.passthrough && n > c.bodyLeft {
				n = c.bodyLeft
			}
			c.out, c.in = c.in[:n:n], c.in[n:]
			if !c.passthrough {
				c.bodyLeft -= n
			}
		case c.passthrough || c.bodyLeft > 0:
			if c.err != nil {
				return 0, c.err
			}
			q := p
			if !c.passthrough && int64(len(q)) > c.bodyLeft {
				q = q[:c.bodyLeft]
			}
			n, err := c.Conn.Read(q)
			if !c.passthrough {
				c.bodyLeft -= int64(n)
			}
			return n, err
		default:
			if end := headEnd(c.in); end >= 0 {
				head := c.in[:end]
				c.in = c.in[end:]
				c.out = c.examine(head)
				continue
			}
			if len(c.in) > maxHeaderScan || c.err != nil {
				// Not a request head we can read: let the server judge.
				c.passthrough = true
				if len(c.in) == 0 {
					return 0, c.err
				}
				continue
			}
			buf := make([]byte, 4096)
			n, err := c.Conn.Read(buf)
			c.in = append(c.in, buf[:n]...)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					// The server's deadlines: keep what was read.
					return 0, err
				}
				c.err = err
			}
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

// headEnd returns the length of the request head at the start of b
// (through its blank line), or -1 if it is incomplete.
func headEnd(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i+1 < len(b) && b[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 3
		}
	}
	return -1
}

// examine looks at one request head: it notes how long the body is, and
// renames Content-Length headers Go would refuse.
func (c *clConn) examine(head []byte) []byte {
	lines := bytes.SplitAfter(head, []byte("\n"))
	var cls []int
	chunked := false
	for i, line := range lines[1:] {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		switch strings.ToLower(string(name)) {
		case "content-length":
			cls = append(cls, i+1)
		case "transfer-encoding":
			chunked = len(bytes.TrimSpace(value)) > 0
		}
	}
	if chunked {
		c.passthrough = true
		return head
	}
	var length int64
	valid := true
	for k, i := range cls {
		_, v, _ := bytes.Cut(lines[i], []byte(":"))
		n, err := strconv.ParseUint(string(bytes.Trim(v, " \t\r\n")), 10, 63)
		if err != nil || (k > 0 && int64(n) != length) {
			valid = false
			break
		}
		length = int64(n)
	}
	if valid {
		c.bodyLeft = length
		return head
	}
	out := make([]byte, 0, len(head)+64)
	for i, line := range lines {
		for _, j := range cls {
			if i == j {
				_, v, _ := bytes.Cut(line, []byte(":"))
				line = append([]byte(badContentLengthHeader+":"), v...)
			}
		}
		out = append(out, line...)
	}
	// Whatever follows is an undelimited body: the API closes the
	// connection after answering.
	c.passthrough = true
	c.bad.Store(true)
	return out
}

// Close drains what the client is still sending after a refused request,
// so that closing does not reset the connection before the client has
// read the answer.
func (c *clConn) Close() error {
	if tc, ok := c.Conn.(*net.TCPConn); ok && c.bad.Load() {
		tc.CloseWrite()
		tc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		io.Copy(io.Discard, tc)
	}
	return c.Conn.Close()
}

// Go's HTTP server answers some requests itself, before any handler
// runs, in plain text: 431 for headers past its bound, 400 for a request
// line or header it cannot read, 501 for a Transfer-Encoding it does not
// know. It writes each such answer whole, in one Write, with these
// headers and nothing else (a handler's answers carry a Date), then
// closes the connection. Write turns them into Placement's error format,
// with a request id.
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c *clConn) Write(b []byte) (int, error) {
	if answer := placementRefusal(b); answer != nil {
		if _, err := c.Conn.Write(answer); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// placementRefusal is Go's own error answer b in Placement's format, or
// nil when b is not one.
func placementRefusal(b []byte) []byte {
	const proto = "HTTP/1.1 "
	if len(b) > 1024 || !bytes.HasPrefix(b, []byte(proto)) {
		return nil
	}
	statusLine, text, ok := bytes.Cut(b[len(proto):], []byte(goErrorHeaders))
	if !ok || len(statusLine) < 3 {
		return nil
	}
	status, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil || status < 400 {
		return nil
	}
	// Go's text: "431 Request Header Fields Too Large", "400 Bad Request:
	// malformed Host header", "Unsupported transfer encoding".
	detail := string(text)
	if rest, ok := strings.CutPrefix(detail, strconv.Itoa(status)+" "+http.StatusText(status)); ok {
		detail = strings.TrimPrefix(rest, ": ")
	}
	if detail == "" {
		detail = map[int]string{
			http.StatusBadRequest:                  "The request line or a header could not be read.",
			http.StatusRequestHeaderFieldsTooLarge: "The request's headers are too large.",
		}[status]
	}
	st := statusInfo(status)
	id := "req-" + uuid.NewString()
	item := errorItem{Status: status, Title: st.title, Code: state.CodeDefault, RequestID: id,
		Detail: stripTags(errorBodyText(&http.Request{Header: http.Header{}}, st, detail, noEscape))}
	body, _ := pyJSON(errorBody{Errors: []errorItem{item}})
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s: %s\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), requestIDHeader, id, body)
}
