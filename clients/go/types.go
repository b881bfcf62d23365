// SPDX-License-Identifier: Apache-2.0

package tickwheel

import "encoding/json"

// The shapes of the API: one struct per object schema of docs/openapi.json
// (components/schemas), with the same name and a json tag per property
// (optional ones omitempty, or pointers): shapes_test.go holds them to it.

// TimerState is pending, delivering, delivered, failed or cancelled.
type TimerState string

const (
	StatePending    TimerState = "pending"
	StateDelivering TimerState = "delivering"
	StateDelivered  TimerState = "delivered"
	StateFailed     TimerState = "failed"
	StateCancelled  TimerState = "cancelled"
)

// UrlTarget is a webhook: an http:// or https:// URL and headers sent
// with every attempt.
type UrlTarget struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
}

// NatsTarget is a NATS JetStream subject.
type NatsTarget struct {
	Nats string `json:"nats"`
}

// Target is one of a URL and a NATS subject: set one of the two.
type Target struct {
	*UrlTarget
	*NatsTarget
}

// URL is a Target of a webhook URL.
func URL(url string) Target { return Target{UrlTarget: &UrlTarget{URL: url}} }

// Nats is a Target of a NATS JetStream subject.
func Nats(subject string) Target { return Target{NatsTarget: &NatsTarget{Nats: subject}} }

// RetryPolicy sets attempts and the first retry delay; zero fields take
// the server's defaults.
type RetryPolicy struct {
	MaxAttempts int   `json:"max_attempts,omitempty"`
	BackoffMs   int64 `json:"backoff_ms,omitempty"`
}

// CreateTimer is a timer to create: exactly one of DelayMs and FireAtMs.
type CreateTimer struct {
	ID       string          `json:"id,omitempty"`
	DelayMs  *int64          `json:"delay_ms,omitempty"`
	FireAtMs *int64          `json:"fire_at_ms,omitempty"`
	Target   Target          `json:"target"`
	Payload  json.RawMessage `json:"payload,omitempty"`
	Retry    *RetryPolicy    `json:"retry,omitempty"`
	// Flow names its flow (docs/flows.md); default its target's host:port.
	Flow string `json:"flow,omitempty"`
}

// CreateTimers is a batch.
type CreateTimers struct {
	Timers []CreateTimer `json:"timers"`
}

// Reschedule moves a pending timer: exactly one of DelayMs and FireAtMs.
type Reschedule struct {
	DelayMs  *int64 `json:"delay_ms,omitempty"`
	FireAtMs *int64 `json:"fire_at_ms,omitempty"`
}

// TimerRetry is a timer's retry policy with the server's defaults filled in.
type TimerRetry struct {
	MaxAttempts int   `json:"max_attempts"`
	BackoffMs   int64 `json:"backoff_ms"`
}

// AttemptLogEntry is one delivery attempt.
type AttemptLogEntry struct {
	StartedMs  int64  `json:"started_ms"`
	DurationMs int64  `json:"duration_ms"`
	Status     int    `json:"status,omitempty"`
	Error      string `json:"error,omitempty"`
	// ThrottledMs is how long its flow held the attempt back (0: not held).
	ThrottledMs int64 `json:"throttled_ms,omitempty"`
}

// Timer is a timer as the server keeps it.
type Timer struct {
	ID            string            `json:"id"`
	State         TimerState        `json:"state"`
	FireAtMs      int64             `json:"fire_at_ms"`
	NextAttemptMs *int64            `json:"next_attempt_ms,omitempty"`
	Attempts      int               `json:"attempts"`
	Retry         TimerRetry        `json:"retry"`
	Target        Target            `json:"target"`
	Flow          string            `json:"flow"`
	Payload       json.RawMessage   `json:"payload"`
	CreatedMs     int64             `json:"created_ms"`
	UpdatedMs     int64             `json:"updated_ms"`
	LastError     string            `json:"last_error,omitempty"`
	AttemptLog    []AttemptLogEntry `json:"attempt_log,omitempty"`
	Traceparent   string            `json:"traceparent,omitempty"`
	Tracestate    string            `json:"tracestate,omitempty"`
}

// TimerPage is a page of a listing; NextAfter is set while there may be more.
type TimerPage struct {
	Timers    []Timer `json:"timers"`
	NextAfter string  `json:"next_after,omitempty"`
}

// CreatedTimer is what a batch create answers for one timer.
type CreatedTimer struct {
	ID       string     `json:"id"`
	State    TimerState `json:"state"`
	FireAtMs int64      `json:"fire_at_ms"`
	Created  bool       `json:"created"`
}

// CreatedTimers is a batch create's answer.
type CreatedTimers struct {
	Timers []CreatedTimer `json:"timers"`
}

// DeadLetterFilter picks dead letters: Prefix and Host narrow, All means
// every one; DryRun only counts.
type DeadLetterFilter struct {
	Prefix         string `json:"prefix,omitempty"`
	Host           string `json:"host,omitempty"`
	All            bool   `json:"all,omitempty"`
	DryRun         bool   `json:"dry_run,omitempty"`
	FailedBeforeMs int64  `json:"failed_before_ms,omitempty"`
}

// DeadLetterOutcome is what a bulk action matched and did.
type DeadLetterOutcome struct {
	Matched        int64 `json:"matched"`
	Done           int64 `json:"done"`
	More           bool  `json:"more"`
	FailedBeforeMs int64 `json:"failed_before_ms"`
	DryRun         bool  `json:"dry_run"`
}

// StateCounts counts timers per state.
type StateCounts struct {
	Pending    int64 `json:"pending"`
	Delivering int64 `json:"delivering"`
	Delivered  int64 `json:"delivered"`
	Failed     int64 `json:"failed"`
	Cancelled  int64 `json:"cancelled"`
}

// DueCounts counts pending timers due soon, up to Cap.
type DueCounts struct {
	Minute int64 `json:"minute"`
	Hour   int64 `json:"hour"`
	Day    int64 `json:"day"`
	Cap    int64 `json:"cap"`
}

// StoreInfo is the store's kind (rocksdb, postgresql) and size.
type StoreInfo struct {
	Kind  string `json:"kind"`
	Bytes int64  `json:"bytes"`
}

// Stats is the server's counts.
type Stats struct {
	Counts    StateCounts `json:"counts"`
	InWindow  int64       `json:"in_window"`
	Due       DueCounts   `json:"due"`
	Store     StoreInfo   `json:"store"`
	Version   string      `json:"version"`
	StartedMs int64       `json:"started_ms"`
	UptimeMs  int64       `json:"uptime_ms"`
	NowMs     int64       `json:"now_ms"`
	Mode      string      `json:"mode"`
	Node      string      `json:"node,omitempty"`
}

// SeriesPoint is one 10-second bucket of the last hour.
type SeriesPoint struct {
	T         int64   `json:"t"`
	Created   float64 `json:"created"`
	Delivered float64 `json:"delivered"`
	Retried   float64 `json:"retried"`
	Failed    float64 `json:"failed"`
	P50       float64 `json:"p50"`
	P99       float64 `json:"p99"`
	Attempts  int64   `json:"attempts"`
}

// StatsSeries is the last hour.
type StatsSeries struct {
	BucketMs int64         `json:"bucket_ms"`
	Points   []SeriesPoint `json:"points"`
}

// SingleNode is the cluster answer of the embedded store.
type SingleNode struct {
	Mode string `json:"mode"`
}

// ClusterNode is a node of a cluster.
type ClusterNode struct {
	NodeID    string `json:"node_id"`
	Instance  string `json:"instance"`
	StartedMs int64  `json:"started_ms"`
	ExpiresMs int64  `json:"expires_ms"`
	Alive     bool   `json:"alive"`
	Shards    int64  `json:"shards"`
	Self      bool   `json:"self"`
	// ClockOffsetMs is how far its clock is from PostgreSQL's (nil: not measured yet).
	ClockOffsetMs *int64 `json:"clock_offset_ms"`
}

// ShardLease is a shard's lease; Owner is nil when no node holds it.
type ShardLease struct {
	Shard int64   `json:"shard"`
	Owner *string `json:"owner"`
	// OwnerInstance is the owner's instance (nil when none).
	OwnerInstance *string `json:"owner_instance"`
	Epoch         int64   `json:"epoch"`
	ExpiresMs     int64   `json:"expires_ms"`
	Live          bool    `json:"live"`
}

// ClusterState is the cluster answer of a cluster node.
type ClusterState struct {
	Mode         string        `json:"mode"`
	Node         string        `json:"node"`
	Instance     string        `json:"instance"`
	NowMs        int64         `json:"now_ms"`
	Shards       int64         `json:"shards"`
	FencedWrites int64         `json:"fenced_writes"`
	Nodes        []ClusterNode `json:"nodes"`
	Leases       []ShardLease  `json:"leases"`
}

// Whoami is the caller's role: admin, read or anonymous.
type Whoami struct {
	Role string `json:"role"`
}

// Health is /healthz's answer.
type Health struct {
	Status      string `json:"status"`
	Store       string `json:"store,omitempty"`
	Node        string `json:"node,omitempty"`
	ShardsOwned *int64 `json:"shards_owned,omitempty"`
	LeasesHeld  *bool  `json:"leases_held,omitempty"`
	// Delivery and Writes are "paused" while an operator paused them
	// (POST /v1/admin/delivery:pause, writes:pause), absent otherwise.
	Delivery string `json:"delivery,omitempty"`
	Writes   string `json:"writes,omitempty"`
}

// ErrorDetail is what went wrong.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	Line    int64  `json:"line,omitempty"` // an import's refused line (1-based)
}

// ErrorBody is the body of every error answer (the schema Error).
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// Delivery is the body of a delivery attempt (what a receiver gets).
type Delivery struct {
	ID       string          `json:"id"`
	Payload  json.RawMessage `json:"payload"`
	FireAtMs int64           `json:"fire_at_ms"`
	Attempt  int             `json:"attempt"`
	// A schedule's occurrence only: its schedule and the time of the
	// recurrence (FireAtMs is when it was due).
	Schedule  string `json:"schedule,omitempty"`
	NominalMs int64  `json:"nominal_ms,omitempty"`
}
