package httpapi

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/placementd/placementd/internal/testcluster"
)

// syncBuffer is a log destination the server's goroutines share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A request without a token keeps upstream's 401 body, and the server's
// request log says the X-Auth-Token header was missing.
func TestUnauthorizedLogNamesTheHeader(t *testing.T) {
	var logs syncBuffer
	a := newTestAPI(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	r := testcluster.Do(t, a.URL, "GET", "/resource_providers", nil, "X-Auth-Token", "")
	if r.Status != 401 || !strings.Contains(string(r.Body), "browser") {
		t.Fatalf("no token: %d %s, want upstream's 401", r.Status, r.Body)
	}
	testcluster.WaitFor(t, 5*time.Second, "the request logged", func() error {
		return testcluster.Check(strings.Contains(logs.String(), "status=401"), "log:\n%s", logs.String())
	})
	if !strings.Contains(logs.String(), `unauthorized="the request has no X-Auth-Token header"`) {
		t.Errorf("the log does not name the missing header:\n%s", logs.String())
	}
}
