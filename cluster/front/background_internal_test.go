package front

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The forwarding client's connections are counted per address while they
// are open: a peer that closes its side (a restart) leaves none open, so
// the voter loop touches it again at once instead of warmEvery later.
func TestAPIConnsCountsOpenConnections(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	var conns apiConns
	hc := &http.Client{Transport: &http.Transport{DialContext: conns.dialer((&net.Dialer{}).DialContext)}}
	if conns.warm(addr) {
		t.Fatal("warm before any request")
	}
	resp, err := hc.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !conns.warm(addr) {
		t.Fatal("no open connection counted after a request on a keep-alive client")
	}
	// The server closes its idle connections, as a restarted peer's did.
	srv.CloseClientConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for conns.warm(addr) {
		select {
		case <-ctx.Done():
			t.Fatal("the connection the server closed is still counted as open")
		case <-time.After(5 * time.Millisecond):
		}
	}
}
