// SPDX-License-Identifier: Apache-2.0

// Package tickwheel is a client of tickwheel serve (durable timers over
// HTTP, docs/openapi.json) and a verifier of its signed deliveries
// (VerifyWebhook). Standard library only.
//
//	c, err := tickwheel.New("http://127.0.0.1:8080", tickwheel.Options{}) // token: TICKWHEEL_TOKEN
//	t, err := c.Create(ctx, tickwheel.CreateTimer{Target: tickwheel.URL("https://hooks.example.com/t"),
//		DelayMs: tickwheel.Ms(30000), Payload: json.RawMessage(`{"order":42}`)})
//	_, err = c.Cancel(ctx, t.ID)
package tickwheel

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// Options of a Client; the zero value is a client with TICKWHEEL_TOKEN,
// the system's CAs, 30 s timeouts and 3 retries.
type Options struct {
	Token   string // default: the TICKWHEEL_TOKEN environment variable
	CAFile  string // PEM CAs trusted for https:// besides the system's
	Timeout time.Duration
	Retries *int // retries of a 503 or a lost connection; default 3
	// OnRetry is called before each retry with the attempt that failed
	// (1, 2, ...) and its error: for logging, metrics, tests.
	OnRetry func(attempt int, err *Error)
	// Transport replaces the HTTP transport (CAFile is then ignored).
	Transport http.RoundTripper
}

// Client is a client of one server. Creates carry an id (generated here
// when not given), so a create whose answer was lost or was a 503 is sent
// again safely: the server answers 200 for the same id and body. Every
// call is retried on a 503 and on a lost connection, after the server's
// Retry-After (or 0.5 s, doubling).
//
// Thread safety: a Client may be used by any number of goroutines.
type Client struct {
	base    string
	token   string
	http    *http.Client
	retries int
	onRetry func(int, *Error)
}

// New makes a client of server ("http://host:port", "https://host:port").
func New(server string, o Options) (*Client, error) {
	if !strings.Contains(server, "://") {
		server = "http://" + server
	}
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("tickwheel: server %q: expected http://host:port or https://host:port", server)
	}
	c := &Client{base: u.Scheme + "://" + u.Host, token: o.Token, retries: 3, onRetry: o.OnRetry}
	if c.token == "" {
		c.token = os.Getenv("TICKWHEEL_TOKEN")
	}
	if o.Retries != nil {
		c.retries = *o.Retries
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	transport := o.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, fmt.Errorf("tickwheel: CA file: %w", err)
			}
			pool, err := x509.SystemCertPool()
			if err != nil {
				pool = x509.NewCertPool()
			}
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("tickwheel: CA file %s holds no PEM certificate", o.CAFile)
			}
			t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		transport = t
	}
	c.http = &http.Client{Transport: transport, Timeout: timeout}
	return c, nil
}

// Ms is a pointer to n, for the optional times of CreateTimer and Reschedule.
func Ms(n int64) *int64 { return &n }

// NewID is an id as the server makes them: 128 random bits, 32 hex digits.
func NewID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// Trace is the caller's W3C Trace Context (both optional; the caller's
// current span), sent as headers of the create: tickwheel serve stores it
// and sends every delivery attempt as a new span of that trace (for a
// batch, every timer's).
type Trace struct {
	Traceparent string
	Tracestate  string
}

func (t Trace) headers() map[string]string {
	if t.Traceparent == "" {
		return nil
	}
	h := map[string]string{"traceparent": t.Traceparent}
	if t.Tracestate != "" {
		h["tracestate"] = t.Tracestate
	}
	return h
}

// Create creates a timer and returns it, durable. The same id and body
// again returns the existing timer; the same id with another body is a
// 409 id_conflict.
func (c *Client) Create(ctx context.Context, t CreateTimer, trace ...Trace) (*Timer, error) {
	if t.ID == "" {
		t.ID = NewID()
	}
	var out Timer
	return &out, c.call(ctx, "POST", "/v1/timers", t, &out, traceHeaders(trace))
}

// CreateBatch creates several timers, all or nothing (ids generated for
// those without one), and returns each one's id, state, fire time and
// whether it was new, in order.
func (c *Client) CreateBatch(ctx context.Context, timers []CreateTimer, trace ...Trace) ([]CreatedTimer, error) {
	withIDs := make([]CreateTimer, len(timers))
	for i, t := range timers {
		if t.ID == "" {
			t.ID = NewID()
		}
		withIDs[i] = t
	}
	var out CreatedTimers
	err := c.call(ctx, "POST", "/v1/timers:batch", CreateTimers{Timers: withIDs}, &out, traceHeaders(trace))
	return out.Timers, err
}

// Get returns a timer; showHeaders asks for target header values (admin
// tokens only).
func (c *Client) Get(ctx context.Context, id string, showHeaders ...bool) (*Timer, error) {
	path := timerPath(id)
	if len(showHeaders) > 0 && showHeaders[0] {
		path += "?show_headers=true"
	}
	var out Timer
	return &out, c.call(ctx, "GET", path, nil, &out, nil)
}

// ListOptions filter a listing.
type ListOptions struct {
	Limit       int    // 1..1000; 0: the server's 100
	After       string // a page's NextAfter
	Prefix      string // ids starting with it
	Host        string // URL targets on this host
	ShowHeaders bool
}

// ListPage returns one page of the timers in state.
func (c *Client) ListPage(ctx context.Context, state TimerState, o ListOptions) (*TimerPage, error) {
	q := url.Values{"state": {string(state)}}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.After != "" {
		q.Set("after", o.After)
	}
	if o.Prefix != "" {
		q.Set("prefix", o.Prefix)
	}
	if o.Host != "" {
		q.Set("host", o.Host)
	}
	if o.ShowHeaders {
		q.Set("show_headers", "true")
	}
	var out TimerPage
	return &out, c.call(ctx, "GET", "/v1/timers?"+q.Encode(), nil, &out, nil)
}

// List calls fn for every timer in state, page after page, until fn
// returns false or there are no more.
func (c *Client) List(ctx context.Context, state TimerState, o ListOptions, fn func(Timer) bool) error {
	return eachPage(o.After, func(after string) ([]Timer, string, error) {
		o.After = after
		page, err := c.ListPage(ctx, state, o)
		if err != nil {
			return nil, "", err
		}
		return page.Timers, page.NextAfter, nil
	}, fn)
}

// eachPage calls fn for the items of page after page: page(after) with
// the next of the page before ("" on the last), from first, until fn
// returns false or the last page.
func eachPage[T any](first string, page func(after string) ([]T, string, error), fn func(T) bool) error {
	after := first
	for {
		items, next, err := page(after)
		if err != nil {
			return err
		}
		for _, item := range items {
			if !fn(item) {
				return nil
			}
		}
		if next == "" {
			return nil
		}
		after = next
	}
}

// Reschedule moves a pending timer (409 not_pending otherwise).
func (c *Client) Reschedule(ctx context.Context, id string, r Reschedule) (*Timer, error) {
	var out Timer
	return &out, c.call(ctx, "PATCH", timerPath(id), r, &out, nil)
}

// Cancel cancels a pending timer (a cancelled one is returned unchanged;
// 409 not_pending for one delivering, delivered or failed).
func (c *Client) Cancel(ctx context.Context, id string) (*Timer, error) {
	var out Timer
	return &out, c.call(ctx, "DELETE", timerPath(id), nil, &out, nil)
}

// Retry re-arms a dead letter now (409 not_failed otherwise).
func (c *Client) Retry(ctx context.Context, id string) (*Timer, error) {
	var out Timer
	return &out, c.call(ctx, "POST", timerPath(id)+":retry", nil, &out, nil)
}

// RetryFailed re-arms the dead letters f matches, at most 10,000 a call:
// while the outcome's More, call again with its FailedBeforeMs (or use
// RetryAllFailed).
func (c *Client) RetryFailed(ctx context.Context, f DeadLetterFilter) (*DeadLetterOutcome, error) {
	var out DeadLetterOutcome
	return &out, c.call(ctx, "POST", "/v1/timers:retry-failed", f, &out, nil)
}

// DeleteFailed deletes the dead letters f matches (Prefix, Host, or All
// is required), as RetryFailed.
func (c *Client) DeleteFailed(ctx context.Context, f DeadLetterFilter) (*DeadLetterOutcome, error) {
	var out DeadLetterOutcome
	return &out, c.call(ctx, "POST", "/v1/timers:delete-failed", f, &out, nil)
}

// RetryAllFailed calls RetryFailed until nothing more matches; the number re-armed.
func (c *Client) RetryAllFailed(ctx context.Context, f DeadLetterFilter) (int64, error) {
	return untilDone(ctx, c.RetryFailed, f)
}

// DeleteAllFailed calls DeleteFailed until nothing more matches; the number deleted.
func (c *Client) DeleteAllFailed(ctx context.Context, f DeadLetterFilter) (int64, error) {
	return untilDone(ctx, c.DeleteFailed, f)
}

func untilDone(ctx context.Context, call func(context.Context, DeadLetterFilter) (*DeadLetterOutcome, error),
	f DeadLetterFilter) (int64, error) {
	var total int64
	for {
		o, err := call(ctx, f)
		if err != nil {
			return total, err
		}
		total += o.Done
		if !o.More || o.DryRun {
			return total, nil
		}
		f.FailedBeforeMs = o.FailedBeforeMs
	}
}

// Stats returns the server's counts.
func (c *Client) Stats(ctx context.Context) (*Stats, error) {
	var out Stats
	return &out, c.call(ctx, "GET", "/v1/stats", nil, &out, nil)
}

// StatsSeries returns the last hour in 10-second buckets.
func (c *Client) StatsSeries(ctx context.Context) (*StatsSeries, error) {
	var out StatsSeries
	return &out, c.call(ctx, "GET", "/v1/stats/series", nil, &out, nil)
}

// Cluster returns the cluster's nodes and leases (a *ClusterState), or a
// *SingleNode for the embedded store.
func (c *Client) Cluster(ctx context.Context) (interface{}, error) {
	var raw json.RawMessage
	if err := c.call(ctx, "GET", "/v1/cluster", nil, &raw, nil); err != nil {
		return nil, err
	}
	var mode SingleNode
	if err := json.Unmarshal(raw, &mode); err != nil {
		return nil, err
	}
	if mode.Mode != "cluster" {
		return &mode, nil
	}
	var state ClusterState
	return &state, json.Unmarshal(raw, &state)
}

// Whoami returns the caller's role.
func (c *Client) Whoami(ctx context.Context) (*Whoami, error) {
	var out Whoami
	return &out, c.call(ctx, "GET", "/v1/whoami", nil, &out, nil)
}

// Health returns /healthz's answer.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var out Health
	return &out, c.call(ctx, "GET", "/healthz", nil, &out, nil)
}

// OpenAPI returns the server's description of its API (OpenAPI 3.1).
func (c *Client) OpenAPI(ctx context.Context) (map[string]interface{}, error) {
	var out map[string]interface{}
	return out, c.call(ctx, "GET", "/v1/openapi.json", nil, &out, nil)
}

func traceHeaders(trace []Trace) map[string]string {
	if len(trace) == 0 {
		return nil
	}
	return trace[0].headers()
}

func timerPath(id string) string { return "/v1/timers/" + url.PathEscape(id) }

func (c *Client) call(ctx context.Context, method, path string, in, out interface{},
	headers map[string]string) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	raw, _, err := c.callRaw(ctx, method, path, body, headers)
	if err != nil || out == nil || len(raw) == 0 {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &Error{Status: 200, Code: "invalid_answer", Message: err.Error()}
	}
	return nil
}

// callRaw makes a request, retried on a 503 or no answer; the body and
// headers of a 2xx, else a *Error.
func (c *Client) callRaw(ctx context.Context, method, path string, body []byte,
	headers map[string]string) ([]byte, http.Header, error) {
	for attempt := 1; ; attempt++ {
		raw, header, apiErr, retryAfter := c.exchange(ctx, method, path, body, headers)
		if apiErr == nil {
			return raw, header, nil
		}
		if (apiErr.Status != 503 && apiErr.Status != 0) || attempt > c.retries || ctx.Err() != nil {
			return nil, nil, apiErr
		}
		if c.onRetry != nil {
			c.onRetry(attempt, apiErr)
		}
		wait := retryAfter
		if wait < 0 {
			wait = time.Duration(500<<uint(attempt-1)) * time.Millisecond
		}
		if wait > 30*time.Second {
			wait = 30 * time.Second
		}
		select {
		case <-ctx.Done():
			return nil, nil, apiErr
		case <-time.After(wait):
		}
	}
}

// exchange makes one request; a 2xx's body and headers, else the error
// and the Retry-After (-1 if none).
func (c *Client) exchange(ctx context.Context, method, path string, body []byte,
	headers map[string]string) ([]byte, http.Header, *Error, time.Duration) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, reader)
	if err != nil {
		return nil, nil, &Error{Status: 0, Code: "connection", Message: err.Error()}, -1
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "tickwheel-go/0.2.0")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, nil, &Error{Status: 0, Code: "connection", Message: "no answer from " + c.base + ": " + err.Error()}, -1
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, nil, &Error{Status: 0, Code: "connection", Message: "answer cut short: " + err.Error()}, -1
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return raw, res.Header, nil, -1
	}
	e := &Error{Status: res.StatusCode, Code: fmt.Sprintf("http_%d", res.StatusCode), Message: string(raw)}
	var detail ErrorBody
	if json.Unmarshal(raw, &detail) == nil && detail.Error.Code != "" {
		e.Code, e.Message, e.Field = detail.Error.Code, detail.Error.Message, detail.Error.Field
	}
	retryAfter := time.Duration(-1)
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s >= 0 {
		retryAfter = time.Duration(s) * time.Second
	}
	return nil, nil, e, retryAfter
}
