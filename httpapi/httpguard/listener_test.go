package httpguard

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
)

// A connection past the cap gets its refusal even while it is sending a
// request: the listener does not close it with the request unread (which
// resets the connection, and the client gets the reset instead of the
// answer: 4 of 5 tries before), but ends its side and drains first.
func TestRefusalArrivesBeforeClose(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusal := "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbusy"
	ln := Listen(tcp, Limits{MaxConns: 1}, []byte(refusal), nil)
	defer ln.Close()
	addr := ln.Addr().String()
	held, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := ln.Accept(); err != nil {
		t.Fatal(err)
	}
	go ln.Accept() // refuses every other connection

	body := bytes.Repeat([]byte("x"), 512<<10)
	for i := range 5 {
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := hc.Post("http://"+addr+"/", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Errorf("try %d: %v", i, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || string(b) != "busy" {
			t.Errorf("try %d: %d %q", i, resp.StatusCode, b)
		}
	}
}
