// SPDX-License-Identifier: Apache-2.0
// The shapes of tickwheel serve's API: generated from docs/openapi.json by
// scripts/generate-types.mjs (`npm run generate`). Do not edit; change the
// description and generate again (test/shapes.test.ts compares the two).

/** A timer's id: 1..128 of `[A-Za-z0-9._~-]` given by its creator (or generated), or a schedule occurrence's `<schedule id>@<nominal Unix ms>` (docs/schedules.md). In a path it is percent-decoded (`report%40123` is `report@123`). */
export type TimerId = string;

/** `pending` (waiting, or waiting for a retry), `delivering` (an attempt in flight), `delivered`, `failed` (a dead letter), `cancelled`. */
export type TimerState = "pending" | "delivering" | "delivered" | "failed" | "cancelled";

/** Unix time in milliseconds. */
export type UnixMs = number;

/** Headers sent with every attempt (url targets only): at most 16, 8 KiB in all; names are HTTP tokens, values have no control characters. Hop-by-hop and framing headers, `Host` and the headers the server sets are refused (400 `reserved_header`). */
export type TargetHeaders = Record<string, string>;

/** A webhook: an `http://` or `https://` URL (certificates verified), checked by the SSRF guard at create and at every attempt. */
export interface UrlTarget {
  url: string;
  headers?: TargetHeaders;
}

/** A NATS JetStream subject (a server started with `--nats`): no wildcards, no empty tokens, not starting with `$`. */
export interface NatsTarget {
  nats: string;
}

export type Target = UrlTarget | NatsTarget;

/** Attempts and the first retry delay; the server's flags (`--max-attempts`, `--backoff`) set what is not given. */
export interface RetryPolicy {
  max_attempts?: number;
  backoff_ms?: number;
}

/** A timer to create: exactly one of `delay_ms` (from when the server receives it) and `fire_at_ms` (a time in the past fires at once), and a target. */
export interface CreateTimer {
  /** Generated (32 hex digits) if absent; give one to make the create idempotent. */
  id?: ClientTimerId;
  delay_ms?: number;
  fire_at_ms?: UnixMs;
  target: Target;
  /** Any JSON value, up to `--payload-limit` bytes serialized; delivered as is. */
  payload?: unknown;
  retry?: RetryPolicy;
  /** The flow it belongs to (docs/flows.md); default its target's `host:port` (a NATS target: the subject's first token). */
  flow?: FlowKey;
}

export interface CreateTimers {
  timers: Array<CreateTimer>;
}

/** The new fire time: exactly one of `delay_ms` and `fire_at_ms`. */
export interface Reschedule {
  delay_ms?: number;
  fire_at_ms?: UnixMs;
}

/** One attempt: when it started, how long it took, the HTTP status when an answer was read, the error if it failed (a NATS attempt that JetStream acknowledged has neither). */
export interface AttemptLogEntry {
  started_ms: UnixMs;
  duration_ms: number;
  status?: number;
  error?: string;
  /** How long its flow held the attempt back after it was due (docs/flows.md); absent when it was not held. */
  throttled_ms?: number;
}

/** A timer as the server keeps it. Target header values are `***` unless an admin token asked with `show_headers=true`. */
export interface Timer {
  id: TimerId;
  state: TimerState;
  fire_at_ms: UnixMs;
  /** When the next attempt is due (pending and delivering timers only). */
  next_attempt_ms?: UnixMs;
  /** Attempts made so far. */
  attempts: number;
  retry: TimerRetry;
  target: Target;
  /** The payload as given (null if none). */
  payload: unknown;
  created_ms: UnixMs;
  updated_ms: UnixMs;
  /** Why the last attempt failed. */
  last_error?: string;
  /** The last 10 attempts, oldest first. */
  attempt_log?: Array<AttemptLogEntry>;
  flow: FlowKey;
  /** The trace context its create was sent with (the `traceparent` header, as stored): each attempt is a new span of this trace, child of this span. Absent when the create had none. */
  traceparent?: Traceparent;
  /** The create's `tracestate`, sent unchanged with each attempt. Absent when it had none. */
  tracestate?: Tracestate;
}

export interface TimerPage {
  timers: Array<Timer>;
  /** Present while there may be more: the `after` of the next page. */
  next_after?: string;
}

export interface CreatedTimers {
  /** In the order of the request. */
  timers: Array<CreatedTimer>;
}

/** Which dead letters: `prefix` and `host` narrow; `all: true` means every one. `dry_run` only counts (up to 100,000). */
export interface DeadLetterFilter {
  prefix?: string;
  host?: string;
  all?: boolean;
  dry_run?: boolean;
  /** Only those that failed before it (default: now + 1 ms). */
  failed_before_ms?: UnixMs;
}

export interface DeadLetterOutcome {
  matched: number;
  done: number;
  /** More may match: call again with this `failed_before_ms`. */
  more: boolean;
  failed_before_ms: UnixMs;
  dry_run: boolean;
}

export interface StateCounts {
  pending: number;
  delivering: number;
  delivered: number;
  failed: number;
  cancelled: number;
}

export interface Stats {
  counts: StateCounts;
  /** Timers in memory (the wheel and those in flight). */
  in_window: number;
  due: DueCounts;
  store: StoreInfo;
  version: string;
  started_ms: UnixMs;
  uptime_ms: number;
  now_ms: UnixMs;
  mode: "node" | "cluster";
  /** Cluster mode: this node's id. */
  node?: string;
}

export interface StatsSeries {
  bucket_ms: number;
  points: Array<SeriesPoint>;
}

export type Cluster = SingleNode | ClusterState;

export interface Whoami {
  role: "admin" | "read" | "anonymous";
}

export interface Health {
  /** `draining` (with 503) from SIGTERM until the drain ends. */
  status: "ok" | "draining";
  /** `unavailable` while the store fails or does not answer the API in time (still 200: the process is alive; it never waits for the store). */
  store?: "ok" | "unavailable";
  /** Cluster mode: this node's id. */
  node?: string;
  /** Cluster mode: shards whose lease this node holds. */
  shards_owned?: number;
  /** Cluster mode: the node holds its shard leases, renewed in time. */
  leases_held?: boolean;
  /** Present while delivery is paused (`POST /v1/admin/delivery:pause`, or `--pause-delivery`): no timer is fired. */
  delivery?: "paused";
  /** Present while clients' writes are paused (`POST /v1/admin/writes:pause`): they answer 503 `writes_paused`. */
  writes?: "paused";
}

export interface Error {
  error: ErrorDetail;
}

/** The body of every delivery attempt. */
export interface Delivery {
  id: TimerId;
  /** The timer's payload as given (null if none). */
  payload: unknown;
  fire_at_ms: UnixMs;
  /** 1 for the first attempt; the same number again for an attempt repeated after a crash. */
  attempt: number;
  /** A schedule's occurrence only: its schedule. */
  schedule?: ScheduleId;
  /** A schedule's occurrence only: the time of the recurrence (`fire_at_ms` is when it was due: later with jitter, catch-up or a trigger). */
  nominal_ms?: UnixMs;
}

/** What went wrong. */
export interface ErrorDetail {
  /** Stable and machine-readable (docs/server.md, Errors). */
  code: "invalid_json" | "bad_request" | "invalid_type" | "unknown_field" | "missing_field" | "conflicting_fields" | "negative_delay" | "beyond_horizon" | "invalid_trace_context" | "invalid_value" | "out_of_range" | "reserved_header" | "unsupported_target" | "target_denied" | "invalid_id" | "duplicate_id" | "method_not_allowed" | "not_found" | "id_conflict" | "not_pending" | "not_failed" | "payload_too_large" | "batch_too_large" | "body_too_large" | "body_too_complex" | "unauthenticated" | "invalid_token" | "forbidden" | "store_corrupt" | "store_unavailable" | "fenced" | "overloaded" | "unsupported_media_type" | "misdirected_request" | "origin_not_allowed" | "invalid_flow" | "schedule_ended" | "occurrence" | "store_error" | "draining" | "backup_exists" | "backup_unsupported" | "unsupported_kind" | "unsupported_format" | "backup_in_progress" | "export_expired" | "backup_failed" | "too_many_exports" | "writes_paused";
  /** For people: what was wrong and what to do. */
  message: string;
  /** The offending field or query parameter, when there is one. */
  field?: string;
  /** `POST /v1/admin/import`: the line of the request's body that was refused (1-based); the message starts with it too. */
  line?: number;
}

/** The retry policy the timer was created with (the server's defaults filled in). */
export interface TimerRetry {
  max_attempts: number;
  backoff_ms: number;
}

export interface CreatedTimer {
  id: TimerId;
  state: TimerState;
  fire_at_ms: UnixMs;
  /** false: it existed already with the same body. */
  created: boolean;
}

/** Pending timers due within a minute, an hour, a day, counted up to `cap`. */
export interface DueCounts {
  minute: number;
  hour: number;
  day: number;
  cap: number;
}

/** The store: its kind and its approximate size on disk. */
export interface StoreInfo {
  kind: "rocksdb" | "postgresql";
  bytes: number;
}

/** One 10-second bucket. */
export interface SeriesPoint {
  /** The bucket's end. */
  t: UnixMs;
  /** Timers created per second. */
  created: number;
  /** Timers delivered per second. */
  delivered: number;
  /** Failed attempts scheduled for a retry, per second. */
  retried: number;
  /** Timers that became dead letters, per second. */
  failed: number;
  /** Lateness of the attempts claimed in the bucket, median (ms). */
  p50: number;
  /** Lateness, 99th percentile (ms). */
  p99: number;
  /** Attempts claimed in the bucket. */
  attempts: number;
}

/** The embedded store: one node, no leases. */
export interface SingleNode {
  mode: "node";
}

/** A cluster node: the nodes, every shard's lease, and this node's fenced writes. */
export interface ClusterState {
  mode: "cluster";
  node: string;
  /** The process's instance id: a node restarted under its name is another instance. */
  instance: string;
  now_ms: UnixMs;
  shards: number;
  fenced_writes: number;
  nodes: Array<ClusterNode>;
  leases: Array<ShardLease>;
}

/** A node of the cluster: its heartbeat and the shards whose lease it holds. */
export interface ClusterNode {
  node_id: string;
  /** The process's instance id: a node restarted under its name is another instance. */
  instance: string;
  started_ms: UnixMs;
  expires_ms: UnixMs;
  alive: boolean;
  shards: number;
  self: boolean;
  /** How far the node's clock is from PostgreSQL's (ms), as it last measured; null before it has. */
  clock_offset_ms: number | null;
}

/** A shard's lease: its owner (null when none), epoch and expiry. */
export interface ShardLease {
  shard: number;
  owner: string | null;
  /** The owner's instance (null when none). */
  owner_instance: string | null;
  epoch: number;
  expires_ms: number;
  live: boolean;
}

/** A schedule's id: its name and the dedup key of its create. */
export type ScheduleId = string;

/** A flow's name: 1..260 printable ASCII characters other than space, `/`, `?`, `#`, `%`, `"` and `\`, not ending in `:pause` or `:resume` (docs/flows.md). In a path it is percent-encoded. */
export type FlowKey = string;

/** A schedule to create: exactly one of `every_ms` and `cron`, and a target. */
export interface CreateSchedule {
  id: ScheduleId;
  /** An interval: occurrences at `anchor_ms + k × every_ms` (UTC, no DST). */
  every_ms?: number;
  /** With `every_ms`; default 0 (the Unix epoch). */
  anchor_ms?: number;
  /** 5 fields (or 6, seconds first), evaluated in `time_zone` (docs/schedules.md, Cron expressions). */
  cron?: string;
  /** With `cron`: an IANA zone name; absent means UTC. */
  time_zone?: string;
  /** With `cron`: a time that does not exist in a spring-forward gap. */
  dst_gap?: "shift" | "skip";
  /** With `cron`: a time that exists twice in a fall-back overlap. */
  dst_overlap?: "first" | "both";
  /** No occurrence before it. */
  start_ms?: UnixMs;
  /** No occurrence at or after it. */
  end_ms?: UnixMs;
  /** The schedule ends after this many fired occurrences. */
  max_occurrences?: number;
  /** Each occurrence is due up to this much after its time, by a hash of its id. */
  jitter_ms?: number;
  /** While the previous occurrence still runs (docs/schedules.md, Overlap). */
  overlap?: "allow" | "skip" | "buffer_one";
  /** Missed occurrences (docs/schedules.md, Catch-up after downtime). */
  catch_up?: "none" | "latest" | "all";
  /** A missed occurrence older than this never fires. */
  catch_up_window_ms?: number;
  /** At most this many missed occurrences fire in one catch-up (`all`). */
  catch_up_max?: number;
  target: Target;
  /** Any JSON value, delivered by every occurrence as is. */
  payload?: unknown;
  retry?: RetryPolicy;
  /** The flow every occurrence belongs to; default the target's `host:port`. */
  flow?: FlowKey;
}

/** The fields given replace the schedule's; `null` removes `start_ms`, `end_ms` or `max_occurrences`. `every_ms` or `cron` replaces the recurrence; `time_zone` or a DST policy alone changes the current cron schedule's. */
export interface PatchSchedule {
  /** An interval: occurrences at `anchor_ms + k × every_ms` (UTC, no DST). */
  every_ms?: number;
  /** With `every_ms`; default 0 (the Unix epoch). */
  anchor_ms?: number;
  /** 5 fields (or 6, seconds first), evaluated in `time_zone` (docs/schedules.md, Cron expressions). */
  cron?: string;
  /** With `cron`: an IANA zone name; absent means UTC. */
  time_zone?: string;
  /** With `cron`: a time that does not exist in a spring-forward gap. */
  dst_gap?: "shift" | "skip";
  /** With `cron`: a time that exists twice in a fall-back overlap. */
  dst_overlap?: "first" | "both";
  start_ms?: UnixMs | null;
  end_ms?: UnixMs | null;
  max_occurrences?: number | null;
  /** Each occurrence is due up to this much after its time, by a hash of its id. */
  jitter_ms?: number;
  /** While the previous occurrence still runs (docs/schedules.md, Overlap). */
  overlap?: "allow" | "skip" | "buffer_one";
  /** Missed occurrences (docs/schedules.md, Catch-up after downtime). */
  catch_up?: "none" | "latest" | "all";
  /** A missed occurrence older than this never fires. */
  catch_up_window_ms?: number;
  /** At most this many missed occurrences fire in one catch-up (`all`). */
  catch_up_max?: number;
  target?: Target;
  /** Any JSON value, delivered by every occurrence as is. */
  payload?: unknown;
  retry?: RetryPolicy;
  /** The flow every occurrence belongs to; default the target's `host:port`. */
  flow?: FlowKey;
}

export type ScheduleState = "active" | "paused" | "ended";

export interface ScheduleCounts {
  planned: number;
  fired: number;
  skipped: {
    overlap: number;
    catch_up: number;
    dst: number;
  };
  triggered: number;
  backfilled: number;
}

export interface UpcomingTime {
  at_ms: UnixMs;
  /** The id its occurrence will have: `<schedule>@<at_ms>`. */
  occurrence: TimerId;
  /** ISO 8601 in UTC. */
  utc: string;
  /** ISO 8601 local time in the schedule's zone (cron schedules). */
  local?: string;
  utc_offset_s?: number;
  abbreviation?: string;
}

export interface OccurrenceSummary {
  id: TimerId;
  nominal_ms?: UnixMs;
  state: TimerState;
  fire_at_ms: UnixMs;
  attempts: number;
  updated_ms: UnixMs;
  /** The HTTP status of its last attempt. */
  status?: number;
  last_error?: string;
}

/** A schedule as the server keeps it, and where its planning stands. Target header values are `***` unless an admin token asked with `show_headers=true`. */
export interface Schedule {
  id: ScheduleId;
  state: ScheduleState;
  ended_reason?: "end_ms" | "max_occurrences" | "no_more_times";
  paused_ms?: UnixMs;
  /** An interval: occurrences at `anchor_ms + k × every_ms` (UTC, no DST). */
  every_ms?: number;
  /** With `every_ms`; default 0 (the Unix epoch). */
  anchor_ms?: number;
  /** 5 fields (or 6, seconds first), evaluated in `time_zone` (docs/schedules.md, Cron expressions). */
  cron?: string;
  /** With `cron`: an IANA zone name; absent means UTC. */
  time_zone?: string;
  /** With `cron`: a time that does not exist in a spring-forward gap. */
  dst_gap?: "shift" | "skip";
  /** With `cron`: a time that exists twice in a fall-back overlap. */
  dst_overlap?: "first" | "both";
  /** No occurrence before it. */
  start_ms?: UnixMs;
  /** No occurrence at or after it. */
  end_ms?: UnixMs;
  /** The schedule ends after this many fired occurrences. */
  max_occurrences?: number;
  /** Each occurrence is due up to this much after its time, by a hash of its id. */
  jitter_ms: number;
  /** While the previous occurrence still runs (docs/schedules.md, Overlap). */
  overlap: "allow" | "skip" | "buffer_one";
  /** Missed occurrences (docs/schedules.md, Catch-up after downtime). */
  catch_up: "none" | "latest" | "all";
  /** A missed occurrence older than this never fires. */
  catch_up_window_ms: number;
  /** At most this many missed occurrences fire in one catch-up (`all`). */
  catch_up_max: number;
  retry: TimerRetry;
  target: Target;
  flow: FlowKey;
  /** The payload as given (null if none). */
  payload: unknown;
  created_ms: UnixMs;
  updated_ms: UnixMs;
  /** The trace context the schedule was created in (its create's `traceparent` header): every attempt of every occurrence is a new span of this trace, child of this span. Absent when the create had none. */
  traceparent?: Traceparent;
  /** The create's `tracestate`, sent unchanged with every attempt. */
  tracestate?: Tracestate;
  /** The planned occurrence's time. */
  next_ms?: UnixMs;
  /** Missed occurrences about to fire. */
  catch_up_ms?: Array<UnixMs>;
  /** The occurrence held back by overlap `buffer_one`. */
  buffered_ms?: UnixMs;
  last_fired_ms?: UnixMs;
  /** Fired, toward `max_occurrences`. */
  occurrences: number;
  counts: ScheduleCounts;
  /** GET of one schedule only: its next `next` times. */
  next?: Array<UpcomingTime>;
  /** GET of one schedule only: its last 10 occurrences, newest first. */
  last_occurrences?: Array<OccurrenceSummary>;
}

export interface SchedulePage {
  schedules: Array<Schedule>;
  /** Present while there may be more: pass it as `after`. */
  next_after?: ScheduleId;
}

export interface Backfill {
  from_ms: UnixMs;
  /** Exclusive; at most now. */
  to_ms: UnixMs;
}

export interface BackfillOutcome {
  created: number;
  existing: number;
  more: boolean;
  /** While `more`: call again from here. */
  next_from_ms?: UnixMs;
}

/** A flow's settings: a field left out takes the server's default (`--flow-default-*`); `null` means no limit. A PUT replaces them all (without `paused` it resumes a paused flow). */
export interface FlowSettings {
  /** Attempts started per second, on average (a token bucket). */
  rate_per_s?: number | null;
  /** How many may start at once after a quiet spell. */
  burst?: number;
  /** Attempts sent and not yet answered, at once. */
  max_in_flight?: number | null;
  paused?: boolean;
}

export interface StoredFlowSettings {
  /** Attempts started per second, on average (a token bucket). */
  rate_per_s?: number | null;
  /** How many may start at once after a quiet spell. */
  burst?: number;
  /** Attempts sent and not yet answered, at once. */
  max_in_flight?: number | null;
  paused: boolean;
  updated_ms: UnixMs;
}

/** A flow: its stored settings, the limits in force, and what it is doing (summed over a cluster's live nodes). */
export interface Flow {
  key: FlowKey;
  /** It has settings of its own. */
  configured: boolean;
  /** What was stored (absent for a flow without settings). */
  settings?: StoredFlowSettings;
  rate_per_s: number | null;
  burst: number | null;
  max_in_flight: number | null;
  paused: boolean;
  /** Timers due now or before and not in flight, counted up to 100,000. */
  due: number;
  due_capped: boolean;
  in_flight: number;
  sent_last_minute: number;
  delivered_last_minute: number;
  throttled_last_minute: number;
  /** The rate the receiver's 429/503 lowered it to, if any. */
  lowered_rate_per_s: number | null;
  /** Held by a receiver's Retry-After until then, if so. */
  held_until_ms: UnixMs | null;
}

export interface FlowPage {
  flows: Array<Flow>;
  /** Present while there may be more: pass it as `after`. */
  next_after?: FlowKey;
}

/** 1..128 of `[A-Za-z0-9._~-]`. */
export type ClientTimerId = string;

/** `<timer id>:<created_ms>`: the same on every attempt of one timer (a timer deleted and created again under its id gets another). */
export type MessageId = string;

/** Where to take a backup. */
export interface BackupRequest {
  /** A new directory, by absolute path on the server's machine, inside one that exists. */
  to: string;
}

/** A hot backup of the embedded store (a RocksDB checkpoint; `tickwheel-backup.json` beside its files names the format and version). `tickwheel serve --data-dir DIR` starts from it. */
export interface Backup {
  /** The backup's directory (normalized). */
  dir: string;
  /** The size of its files (hard links count in full). */
  bytes: number;
  /** How many files it holds. */
  files: number;
  /** How long the checkpoint took. */
  took_ms: number;
  /** The record format of the records in it: a server reading an older format only refuses it at start. */
  record_format: number;
  /** The version of the server that took it. */
  server_version: string;
  taken_ms: UnixMs;
}

/** Whether this server fires timers and takes clients' writes. */
export interface AdminMode {
  /** `paused`: no timer is fired. */
  delivery: "paused" | "running";
  /** `paused`: clients' writes answer 503 `writes_paused`. */
  writes: "paused" | "accepted";
  /** Delivery attempts in flight now (after `delivery:pause`: those still without an outcome when `--drain-timeout` ran out). */
  in_flight: number;
}

/** A record whose id (schedule, flow key) holds something else here: it was left as it is. One of `id`, `schedule`, `flow`. */
export interface ImportConflict {
  /** The line of the request's body. */
  line: number;
  id?: TimerId;
  schedule?: ScheduleId;
  flow?: FlowKey;
  message: string;
}

/** What one import request did (one durable write). */
export interface ImportResult {
  /** Non-blank lines read. */
  lines: number;
  timers: number;
  schedules: number;
  /** Flow lines (settings). */
  flows: number;
  /** Records that were free here and are now stored (durable). */
  created: number;
  /** Records already here, the same (same create digest; a flow: same limits and pause): left alone, so the same file imported twice creates nothing new. */
  existing: number;
  conflicts: Array<ImportConflict>;
}

/** The first line of an export. An export writes every field; an import reads `format` and `timers`. */
export interface ExportHeader {
  kind: "export";
  /** The export format (1); a server refuses a newer one (400 `unsupported_format`). */
  format: number;
  server_version?: string;
  store?: "embedded" | "postgres";
  taken_ms?: UnixMs;
  /** The states exported. */
  states?: Array<TimerState>;
  counts?: StateCounts;
  /** Timer lines that follow: with the `end` line, an importer tells a truncated file from a whole one. */
  timers: number;
}

/** A timer of an export: what `GET /v1/timers/{id}` answers (target header values included) and its create digest. Occurrences of schedules (`<schedule>@<time>`) are timers too. */
export interface ExportTimer {
  kind: "timer";
  id: TimerId;
  state: TimerState;
  fire_at_ms: UnixMs;
  next_attempt_ms?: UnixMs;
  attempts: number;
  retry: TimerRetry;
  target: Target;
  payload: unknown;
  created_ms: UnixMs;
  updated_ms: UnixMs;
  last_error?: string;
  attempt_log?: Array<AttemptLogEntry>;
  flow: FlowKey;
  traceparent?: Traceparent;
  tracestate?: Tracestate;
  /** The digest of the create request that made the timer: a client repeating its create after a move still gets 200, not 409. */
  create_digest: string;
}

/** A timer to import, restored as it was: an export's timer line, or one with only its create body, `id` and `state` (the rest defaults: no attempts, created now, the digest of that create body). */
export interface ImportTimer {
  /** A line without `kind` is a timer. */
  kind?: "timer";
  id: TimerId;
  state: TimerState;
  fire_at_ms: UnixMs;
  next_attempt_ms?: UnixMs;
  attempts?: number;
  retry?: TimerRetry;
  target: Target;
  payload?: unknown;
  created_ms?: UnixMs;
  updated_ms?: UnixMs;
  last_error?: string;
  attempt_log?: Array<AttemptLogEntry>;
  flow?: FlowKey;
  traceparent?: Traceparent;
  tracestate?: Tracestate;
  /** The digest of the create request that made the timer: a client repeating its create after a move still gets 200, not 409. */
  create_digest?: string;
}

/** A schedule of an export (only in an export of every state). */
export interface ExportSchedule {
  kind: "schedule";
  id: ScheduleId;
  /** The schedule as the store keeps it (its versioned record: recurrence, policies, where its planner is): what an import reads. */
  record: string;
  /** What `GET /v1/schedules/{id}` shows, for reading and diffing (an import ignores it); null for a record this server cannot read. */
  schedule?: Schedule | null;
}

/** A flow's stored settings (only in an export of every state). A paused flow stays paused after an import. */
export interface ExportFlow {
  kind: "flow";
  key: FlowKey;
  settings: StoredFlowSettings;
}

/** The last line of a whole export. */
export interface ExportEnd {
  kind: "end";
}

/** One line of an export (JSON Lines): the header, then timers in id order, schedules, flows, and `end` on the last page. */
export type ExportLine = ExportHeader | ExportTimer | ExportSchedule | ExportFlow | ExportEnd;

/** One line of an import's body: a line of an export (a timer's may omit what defaults). A `kind` this server does not know is refused (400 `unsupported_kind`), never dropped. */
export type ImportLine = ExportHeader | ImportTimer | ExportSchedule | ExportFlow | ExportEnd;

/** A W3C Trace Context traceparent (https://www.w3.org/TR/trace-context/), version 00: `00-<trace-id>-<parent-id>-<flags>`, only the sampled flag kept. */
export type Traceparent = string;

/** A W3C Trace Context tracestate: vendors' `key=value` list members, comma-separated, passed on unchanged. */
export type Tracestate = string;
