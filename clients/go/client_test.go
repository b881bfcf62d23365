// SPDX-License-Identifier: Apache-2.0

package tickwheel

// The client against a real tickwheel serve (tokens on; HTTPS with a test
// CA for one case), started by clients/testdata/run_with_server.py.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

func adminClient(t *testing.T) (*Client, testEnv) {
	t.Helper()
	e := env(t)
	c, err := New(e.server, Options{Token: e.admin})
	if err != nil {
		t.Fatal(err)
	}
	return c, e
}

func mustCode(t *testing.T, err error, status int, code string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want a *tickwheel.Error %d %s, got %v", status, code, err)
	}
	if e.Status != status || e.Code != code {
		t.Fatalf("want %d %s, got %d %s (%s)", status, code, e.Status, e.Code, e.Message)
	}
	return e
}

func TestCreateGetRescheduleCancel(t *testing.T) {
	c, _ := adminClient(t)
	r := newReceiver()
	defer r.srv.Close()
	ctx := context.Background()
	created, err := c.Create(ctx, CreateTimer{ID: "go-1", DelayMs: Ms(600_000), Target: URL(r.url("/hook")),
		Payload: json.RawMessage(`{"order":42}`), Flow: "go-flow"})
	if err != nil {
		t.Fatal(err)
	}
	if created.ID != "go-1" || created.State != StatePending || created.Flow != "go-flow" {
		t.Fatalf("created %+v", created)
	}
	got, err := c.Get(ctx, "go-1")
	if err != nil || string(got.Payload) != `{"order":42}` || got.Target.UrlTarget == nil ||
		got.Target.URL != r.url("/hook") {
		t.Fatalf("get: %+v %v", got, err)
	}
	later, err := c.Reschedule(ctx, "go-1", Reschedule{FireAtMs: Ms(got.FireAtMs + 1000)})
	if err != nil || later.FireAtMs != got.FireAtMs+1000 {
		t.Fatalf("reschedule: %+v %v", later, err)
	}
	cancelled, err := c.Cancel(ctx, "go-1")
	if err != nil || cancelled.State != StateCancelled {
		t.Fatalf("cancel: %+v %v", cancelled, err)
	}
	// Cancelled already: the same answer again.
	if again, err := c.Cancel(ctx, "go-1"); err != nil || again.State != StateCancelled {
		t.Fatalf("cancel again: %+v %v", again, err)
	}
}

func TestACreateWithoutIDGetsOneAndRepeatsSafely(t *testing.T) {
	c, _ := adminClient(t)
	ctx := context.Background()
	body := CreateTimer{DelayMs: Ms(600_000), Target: URL("http://127.0.0.1:9/never")}
	first, err := c.Create(ctx, body)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(first.ID) {
		t.Fatalf("id %q", first.ID)
	}
	body.ID = first.ID
	again, err := c.Create(ctx, body)
	if err != nil || again.CreatedMs != first.CreatedMs {
		t.Fatalf("the same create again: %+v %v", again, err)
	}
}

func TestErrorsAreTypedAndCarryTheServersCode(t *testing.T) {
	c, _ := adminClient(t)
	ctx := context.Background()
	target := URL("http://127.0.0.1:9/never")
	_, err := c.Create(ctx, CreateTimer{DelayMs: Ms(-5), Target: target})
	if e := mustCode(t, err, 400, "negative_delay"); e.Field != "delay_ms" || !IsBadRequest(err) {
		t.Fatalf("field %q", e.Field)
	}
	_, err = c.Get(ctx, "go-no-such-timer")
	mustCode(t, err, 404, "not_found")
	if !IsNotFound(err) {
		t.Fatal("IsNotFound")
	}
	if _, err := c.Create(ctx, CreateTimer{ID: "go-conflict", DelayMs: Ms(600_000), Target: target}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Create(ctx, CreateTimer{ID: "go-conflict", DelayMs: Ms(600_000), Target: target,
		Payload: json.RawMessage(`1`)})
	mustCode(t, err, 409, "id_conflict")
	if _, err := c.Cancel(ctx, "go-conflict"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Reschedule(ctx, "go-conflict", Reschedule{DelayMs: Ms(1)})
	mustCode(t, err, 409, "not_pending")
	if !IsConflict(err) {
		t.Fatal("IsConflict")
	}
	// Any character of an id is sent encoded: the server names it.
	_, err = c.Get(ctx, "a b/c")
	mustCode(t, err, 400, "invalid_id")
}

func TestBatchIsAllOrNothing(t *testing.T) {
	c, _ := adminClient(t)
	ctx := context.Background()
	target := URL("http://127.0.0.1:9/never")
	created, err := c.CreateBatch(ctx, []CreateTimer{
		{ID: "go-b1", DelayMs: Ms(600_000), Target: target}, {DelayMs: Ms(600_000), Target: target}})
	if err != nil || len(created) != 2 || created[0].ID != "go-b1" || !created[0].Created || !created[1].Created {
		t.Fatalf("batch: %+v %v", created, err)
	}
	_, err = c.CreateBatch(ctx, []CreateTimer{
		{ID: "go-b2", DelayMs: Ms(1), Target: target}, {ID: "go-b1", DelayMs: Ms(1), Target: target}})
	mustCode(t, err, 409, "id_conflict")
	_, err = c.Get(ctx, "go-b2")
	mustCode(t, err, 404, "not_found")
}

func TestListPagesThroughEverything(t *testing.T) {
	c, _ := adminClient(t)
	ctx := context.Background()
	var want []string
	for i := 0; i < 7; i++ {
		id := fmt.Sprintf("go-list-%d", i)
		want = append(want, id)
		if _, err := c.Create(ctx, CreateTimer{ID: id, DelayMs: Ms(600_000), Target: URL("http://127.0.0.1:9/never")}); err != nil {
			t.Fatal(err)
		}
	}
	var listed []string
	err := c.List(ctx, StatePending, ListOptions{Prefix: "go-list-", Limit: 2}, func(tm Timer) bool {
		listed = append(listed, tm.ID)
		return true
	})
	sort.Strings(listed)
	if err != nil || strings.Join(listed, ",") != strings.Join(want, ",") {
		t.Fatalf("listed %v, %v", listed, err)
	}
	page, err := c.ListPage(ctx, StatePending, ListOptions{Prefix: "go-list-", Limit: 2})
	if err != nil || len(page.Timers) != 2 || page.NextAfter == "" {
		t.Fatalf("page %+v %v", page, err)
	}
}

func TestDeadLettersAreRetriedAndDeleted(t *testing.T) {
	c, _ := adminClient(t)
	r := newReceiver()
	defer r.srv.Close()
	ctx := context.Background()
	state := func(id string) TimerState {
		tm, err := c.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return tm.State
	}
	for i := 0; i < 3; i++ {
		_, err := c.Create(ctx, CreateTimer{ID: fmt.Sprintf("go-dead-%d", i), DelayMs: Ms(0),
			Target: URL(r.url(fmt.Sprintf("/fail-%d", i))), Retry: &RetryPolicy{MaxAttempts: 1, BackoffMs: 1}})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("go-dead-%d", i)
		waitUntil(t, id+" failed", func() bool { return state(id) == StateFailed })
	}
	if tm, err := c.Retry(ctx, "go-dead-0"); err != nil || tm.State != StatePending {
		t.Fatalf("retry: %+v %v", tm, err)
	}
	waitUntil(t, "go-dead-0 failed again", func() bool { return state("go-dead-0") == StateFailed })
	dry, err := c.DeleteFailed(ctx, DeadLetterFilter{Prefix: "go-dead-", DryRun: true})
	if err != nil || dry.Matched != 3 || dry.Done != 0 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	if n, err := c.RetryAllFailed(ctx, DeadLetterFilter{Prefix: "go-dead-2"}); err != nil || n != 1 {
		t.Fatalf("retried %d, %v", n, err)
	}
	waitUntil(t, "go-dead-2 failed again", func() bool { return state("go-dead-2") == StateFailed })
	if n, err := c.DeleteAllFailed(ctx, DeadLetterFilter{Prefix: "go-dead-"}); err != nil || n != 3 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	_, err = c.Get(ctx, "go-dead-1")
	mustCode(t, err, 404, "not_found")
	_, err = c.DeleteFailed(ctx, DeadLetterFilter{})
	if e := mustCode(t, err, 400, CodeOf(err)); e.Field != "all" {
		t.Fatalf("no filter: %+v", e)
	}
}

func TestTheServer(t *testing.T) {
	c, _ := adminClient(t)
	ctx := context.Background()
	stats, err := c.Stats(ctx)
	if err != nil || stats.Store.Kind != "rocksdb" || stats.Version == "" {
		t.Fatalf("stats %+v %v", stats, err)
	}
	if w, err := c.Whoami(ctx); err != nil || w.Role != "admin" {
		t.Fatalf("whoami %+v %v", w, err)
	}
	if h, err := c.Health(ctx); err != nil || h.Status != "ok" {
		t.Fatalf("health %+v %v", h, err)
	}
	if cl, err := c.Cluster(ctx); err != nil || cl.(*SingleNode).Mode != "node" {
		t.Fatalf("cluster %+v %v", cl, err)
	}
	if s, err := c.StatsSeries(ctx); err != nil || s.BucketMs <= 0 {
		t.Fatalf("series %+v %v", s, err)
	}
	if d, err := c.OpenAPI(ctx); err != nil || d["openapi"] != "3.1.0" {
		t.Fatalf("openapi %v", err)
	}
}

func TestTheTokenComesFromTheEnvironment(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	t.Setenv("TICKWHEEL_TOKEN", e.read)
	reader, err := New(e.server, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w, err := reader.Whoami(ctx); err != nil || w.Role != "read" {
		t.Fatalf("whoami %+v %v", w, err)
	}
	_, err = reader.Create(ctx, CreateTimer{DelayMs: Ms(1), Target: URL("http://127.0.0.1:9/never")})
	mustCode(t, err, 403, "forbidden")
	t.Setenv("TICKWHEEL_TOKEN", "")
	nobody, _ := New(e.server, Options{})
	_, err = nobody.Whoami(ctx)
	mustCode(t, err, 401, "unauthenticated")
	if !IsUnauthorized(err) {
		t.Fatal("IsUnauthorized")
	}
}

func TestADeliveryVerifiesWithTheServersSecrets(t *testing.T) {
	c, e := adminClient(t)
	r := newReceiver()
	defer r.srv.Close()
	ctx := context.Background()
	if _, err := c.Create(ctx, CreateTimer{ID: "go-signed", DelayMs: Ms(0), Target: URL(r.url("/signed")),
		Payload: json.RawMessage(`{"n":1}`)}); err != nil {
		t.Fatal(err)
	}
	got := r.waitFor(t, "/signed")
	d, err := VerifyWebhook(e.secrets, got.header, got.body)
	if err != nil || d.ID != "go-signed" || string(d.Payload) != `{"n":1}` || d.Attempt != 1 {
		t.Fatalf("verified %+v %v", d, err)
	}
	// The second secret alone (rotation).
	if _, err := VerifyWebhook(e.secrets[1:], got.header, got.body); err != nil {
		t.Fatal(err)
	}
	var w *WebhookError
	_, err = VerifyWebhook(e.secrets, got.header, bytes.Replace(got.body, []byte(`"n":1`), []byte(`"n":2`), 1))
	if !errors.As(err, &w) || w.Reason != "signature" {
		t.Fatalf("forged: %v", err)
	}
	_, err = VerifyWebhook(e.secrets, got.header, got.body, VerifyOptions{Now: time.Now().Add(10 * time.Minute)})
	if !errors.As(err, &w) || w.Reason != "timestamp" {
		t.Fatalf("stale: %v", err)
	}
}

func TestTheCallersTraceContextReachesTheDelivery(t *testing.T) {
	c, e := adminClient(t)
	r := newReceiver()
	defer r.srv.Close()
	ctx := context.Background()
	parent := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	got, err := c.Create(ctx, CreateTimer{ID: "go-traced", DelayMs: Ms(0), Target: URL(r.url("/traced"))},
		Trace{Traceparent: parent, Tracestate: "rojo=1"})
	if err != nil || got.Traceparent != parent || got.Tracestate != "rojo=1" {
		t.Fatalf("created %+v %v", got, err)
	}
	d := r.waitFor(t, "/traced")
	sent := strings.Split(d.header.Get("traceparent"), "-")
	if len(sent) != 4 || sent[1] != "0af7651916cd43dd8448eb211c80319c" || sent[2] == "b7ad6b7169203331" ||
		d.header.Get("tracestate") != "rojo=1" {
		t.Fatalf("delivered with traceparent %q tracestate %q", d.header.Get("traceparent"), d.header.Get("tracestate"))
	}
	if _, err := VerifyWebhook(e.secrets, d.header, d.body); err != nil {
		t.Fatal(err)
	}
	var apiErr *Error
	_, err = c.Create(ctx, CreateTimer{DelayMs: Ms(1), Target: URL(r.url("/"))}, Trace{Traceparent: "00-nonsense"})
	if !errors.As(err, &apiErr) || apiErr.Code != "invalid_trace_context" {
		t.Fatalf("a malformed traceparent: %v", err)
	}
}

func TestHTTPSWithAPrivateCA(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	c, err := New(e.tlsServer, Options{Token: e.admin, CAFile: e.caFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, CreateTimer{ID: "go-tls", DelayMs: Ms(600_000), Target: URL("http://127.0.0.1:9/never")}); err != nil {
		t.Fatal(err)
	}
	if tm, err := c.Get(ctx, "go-tls"); err != nil || tm.ID != "go-tls" {
		t.Fatalf("get %+v %v", tm, err)
	}
	c.http.CloseIdleConnections() // --max-connections 1
	zero := 0
	untrusted, _ := New(e.tlsServer, Options{Token: e.admin, Retries: &zero})
	_, err = untrusted.Whoami(ctx)
	mustCode(t, err, 0, "connection")
}

// holdTheOnlyConnection opens a TCP connection to the TLS server (started
// with --max-connections 1) and returns once the server counts it: a
// probe on another connection is then answered 503 overloaded (any route but /healthz,
// which is answered even then).
func holdTheOnlyConnection(t *testing.T, e testEnv) net.Conn {
	t.Helper()
	addr := strings.TrimPrefix(e.tlsServer, "https://")
	held, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	pem, _ := os.ReadFile(e.caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	refused := func() bool {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
			&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			return false
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(conn, "GET /v1/whoami HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr)
		head := make([]byte, 12)
		n, _ := conn.Read(head)
		return strings.HasPrefix(string(head[:n]), "HTTP/1.1 503")
	}
	waitUntil(t, "the held connection counted by the server", refused)
	return held
}

func TestA503IsRetriedWithTheSameID(t *testing.T) {
	e := env(t)
	ctx := context.Background()
	held := holdTheOnlyConnection(t, e)
	var refusals []string
	c, err := New(e.tlsServer, Options{Token: e.admin, CAFile: e.caFile, OnRetry: func(attempt int, err *Error) {
		refusals = append(refusals, fmt.Sprintf("%d %d %s", attempt, err.Status, err.Code))
		held.Close() // the next attempt finds the server free
	}})
	if err != nil {
		t.Fatal(err)
	}
	tm, err := c.Create(ctx, CreateTimer{DelayMs: Ms(600_000), Target: URL("http://127.0.0.1:9/never"),
		Payload: json.RawMessage(`"x"`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(refusals) == 0 || refusals[0] != "1 503 overloaded" {
		t.Fatalf("refusals %v", refusals)
	}
	if got, err := c.Get(ctx, tm.ID); err != nil || string(got.Payload) != `"x"` {
		t.Fatalf("get %+v %v", got, err)
	}
	c.http.CloseIdleConnections()
}
