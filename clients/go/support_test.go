// SPDX-License-Identifier: Apache-2.0

package tickwheel

// What the tests share: the servers clients/testdata/run_with_server.py
// started (from the environment), a webhook receiver, polling with a
// deadline.

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

type testEnv struct {
	server, tlsServer, caFile, admin, read, openapi, vectors string
	secrets                                                  []string
}

// env fails (not skips) a test run without run_with_server.py.
func env(t *testing.T) testEnv {
	t.Helper()
	e := testEnv{
		server: os.Getenv("TICKWHEEL_TEST_SERVER"), tlsServer: os.Getenv("TICKWHEEL_TEST_TLS_SERVER"),
		caFile: os.Getenv("TICKWHEEL_TEST_CA_FILE"), admin: os.Getenv("TICKWHEEL_TEST_ADMIN_TOKEN"),
		read: os.Getenv("TICKWHEEL_TEST_READ_TOKEN"), openapi: os.Getenv("TICKWHEEL_TEST_OPENAPI"),
		vectors: os.Getenv("TICKWHEEL_TEST_VECTORS"),
		secrets: strings.Fields(os.Getenv("TICKWHEEL_TEST_WEBHOOK_SECRETS")),
	}
	if e.server == "" {
		t.Fatal("run these tests through clients/testdata/run_with_server.py (ctest -R go_client)")
	}
	return e
}

type received struct {
	header http.Header
	body   []byte
}

// receiver records deliveries by path; paths starting with /fail answer 500.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  map[string][]received
	cond *sync.Cond
}

func newReceiver() *receiver {
	r := &receiver{got: map[string][]received{}}
	r.cond = sync.NewCond(&r.mu)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got[req.URL.Path] = append(r.got[req.URL.Path], received{req.Header.Clone(), body})
		r.cond.Broadcast()
		r.mu.Unlock()
		if strings.HasPrefix(req.URL.Path, "/fail") {
			w.WriteHeader(500)
		}
	}))
	return r
}

func (r *receiver) url(path string) string { return r.srv.URL + path }

// waitFor returns the first delivery to path, failing the test after 30 s.
func (r *receiver) waitFor(t *testing.T, path string) received {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	go func() { time.Sleep(30 * time.Second); r.cond.Broadcast() }()
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.got[path]) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no delivery to %s within 30 s", path)
		}
		r.cond.Wait()
	}
	return r.got[path][0]
}

// waitUntil polls cond every 20 ms, failing the test after 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s not met within 30 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
