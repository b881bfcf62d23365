# SPDX-License-Identifier: Apache-2.0
"""The shapes of the API, one TypedDict per object schema of
docs/openapi.json (components/schemas), with the same name, the same keys
and the same required keys: tests/test_shapes.py holds them to it."""

from typing import Any, Dict, List, Literal, NotRequired, Optional, Required, TypedDict, Union

TimerState = Literal["pending", "delivering", "delivered", "failed", "cancelled"]


class UrlTarget(TypedDict):
    url: str
    headers: NotRequired[Dict[str, str]]


class NatsTarget(TypedDict):
    nats: str


Target = Union[UrlTarget, NatsTarget]


class RetryPolicy(TypedDict, total=False):
    max_attempts: int
    backoff_ms: int


class CreateTimer(TypedDict):
    target: Target
    id: NotRequired[str]
    delay_ms: NotRequired[int]
    fire_at_ms: NotRequired[int]
    payload: NotRequired[Any]
    retry: NotRequired[RetryPolicy]
    flow: NotRequired[str]


class CreateTimers(TypedDict):
    timers: List[CreateTimer]


class Reschedule(TypedDict, total=False):
    delay_ms: int
    fire_at_ms: int


class TimerRetry(TypedDict):
    max_attempts: int
    backoff_ms: int


class AttemptLogEntry(TypedDict):
    started_ms: int
    duration_ms: int
    status: NotRequired[int]
    error: NotRequired[str]
    throttled_ms: NotRequired[int]


class Timer(TypedDict):
    id: str
    state: TimerState
    fire_at_ms: int
    attempts: int
    retry: TimerRetry
    target: Target
    flow: str
    payload: Any
    created_ms: int
    updated_ms: int
    next_attempt_ms: NotRequired[int]
    last_error: NotRequired[str]
    attempt_log: NotRequired[List[AttemptLogEntry]]
    traceparent: NotRequired[str]
    tracestate: NotRequired[str]


class TimerPage(TypedDict):
    timers: List[Timer]
    next_after: NotRequired[str]


class CreatedTimer(TypedDict):
    id: str
    state: TimerState
    fire_at_ms: int
    created: bool


class CreatedTimers(TypedDict):
    timers: List[CreatedTimer]


DeadLetterFilter = TypedDict(
    "DeadLetterFilter",
    {"prefix": str, "host": str, "all": bool, "dry_run": bool, "failed_before_ms": int},
    total=False,
)


class DeadLetterOutcome(TypedDict):
    matched: int
    done: int
    more: bool
    failed_before_ms: int
    dry_run: bool


class StateCounts(TypedDict):
    pending: int
    delivering: int
    delivered: int
    failed: int
    cancelled: int


class DueCounts(TypedDict):
    minute: int
    hour: int
    day: int
    cap: int


class StoreInfo(TypedDict):
    kind: Literal["rocksdb", "postgresql"]
    bytes: int


class Stats(TypedDict):
    counts: StateCounts
    in_window: int
    due: DueCounts
    store: StoreInfo
    version: str
    started_ms: int
    uptime_ms: int
    now_ms: int
    mode: Literal["node", "cluster"]
    node: NotRequired[str]


class SeriesPoint(TypedDict):
    t: int
    created: float
    delivered: float
    retried: float
    failed: float
    p50: float
    p99: float
    attempts: int


class StatsSeries(TypedDict):
    bucket_ms: int
    points: List[SeriesPoint]


class SingleNode(TypedDict):
    mode: Literal["node"]


ClusterNode = TypedDict(
    "ClusterNode",
    {"node_id": str, "instance": str, "started_ms": int, "expires_ms": int, "alive": bool,
     "shards": int, "self": bool, "clock_offset_ms": Optional[int]},
)


class ShardLease(TypedDict):
    shard: int
    owner: Optional[str]
    owner_instance: Optional[str]
    epoch: int
    expires_ms: int
    live: bool


class ClusterState(TypedDict):
    mode: Literal["cluster"]
    node: str
    instance: str
    now_ms: int
    shards: int
    fenced_writes: int
    nodes: List[ClusterNode]
    leases: List[ShardLease]


Cluster = Union[SingleNode, ClusterState]


class Whoami(TypedDict):
    role: Literal["admin", "read", "anonymous"]


class Health(TypedDict):
    status: Literal["ok", "draining"]
    store: NotRequired[Literal["ok", "unavailable"]]
    node: NotRequired[str]
    shards_owned: NotRequired[int]
    leases_held: NotRequired[bool]
    delivery: NotRequired[Literal["paused"]]
    writes: NotRequired[Literal["paused"]]


class ErrorDetail(TypedDict):
    code: str
    message: str
    field: NotRequired[str]
    line: NotRequired[int]


class Error(TypedDict):
    error: ErrorDetail


class Delivery(TypedDict):
    """The body of a delivery attempt (what a receiver gets)."""

    id: str
    payload: Any
    fire_at_ms: int
    attempt: int
    schedule: NotRequired[str]  # a schedule's occurrence only
    nominal_ms: NotRequired[int]


# Schedules (docs/schedules.md) and flows (docs/flows.md): the shapes only;
# the client has no calls for them yet.

ScheduleState = Literal["active", "paused", "ended"]

_Recurrence = TypedDict(
    "_Recurrence",
    {"every_ms": int, "anchor_ms": int, "cron": str, "time_zone": str,
     "dst_gap": Literal["shift", "skip"], "dst_overlap": Literal["first", "both"],
     "start_ms": Optional[int], "end_ms": Optional[int], "max_occurrences": Optional[int],
     "jitter_ms": int, "overlap": Literal["allow", "skip", "buffer_one"],
     "catch_up": Literal["none", "latest", "all"], "catch_up_window_ms": int, "catch_up_max": int,
     "target": Target, "payload": Any, "retry": RetryPolicy, "flow": str},
    total=False,
)


class CreateSchedule(_Recurrence):
    id: Required[str]
    target: Required[Target]


class PatchSchedule(_Recurrence):
    pass


class _Skipped(TypedDict):
    overlap: int
    catch_up: int
    dst: int


class ScheduleCounts(TypedDict):
    planned: int
    fired: int
    skipped: _Skipped
    triggered: int
    backfilled: int


class UpcomingTime(TypedDict):
    at_ms: int
    occurrence: str
    utc: str
    local: NotRequired[str]
    utc_offset_s: NotRequired[int]
    abbreviation: NotRequired[str]


class OccurrenceSummary(TypedDict):
    id: str
    state: TimerState
    fire_at_ms: int
    attempts: int
    updated_ms: int
    nominal_ms: NotRequired[int]
    status: NotRequired[int]
    last_error: NotRequired[str]


class Schedule(TypedDict):
    id: str
    state: ScheduleState
    jitter_ms: int
    overlap: Literal["allow", "skip", "buffer_one"]
    catch_up: Literal["none", "latest", "all"]
    catch_up_window_ms: int
    catch_up_max: int
    retry: TimerRetry
    target: Target
    flow: str
    payload: Any
    created_ms: int
    updated_ms: int
    occurrences: int
    counts: ScheduleCounts
    ended_reason: NotRequired[Literal["end_ms", "max_occurrences", "no_more_times"]]
    paused_ms: NotRequired[int]
    every_ms: NotRequired[int]
    anchor_ms: NotRequired[int]
    cron: NotRequired[str]
    time_zone: NotRequired[str]
    dst_gap: NotRequired[Literal["shift", "skip"]]
    dst_overlap: NotRequired[Literal["first", "both"]]
    start_ms: NotRequired[int]
    end_ms: NotRequired[int]
    max_occurrences: NotRequired[int]
    next_ms: NotRequired[int]
    catch_up_ms: NotRequired[List[int]]
    buffered_ms: NotRequired[int]
    last_fired_ms: NotRequired[int]
    next: NotRequired[List[UpcomingTime]]
    last_occurrences: NotRequired[List[OccurrenceSummary]]
    traceparent: NotRequired[str]
    tracestate: NotRequired[str]


class SchedulePage(TypedDict):
    schedules: List[Schedule]
    next_after: NotRequired[str]


class Backfill(TypedDict):
    from_ms: int
    to_ms: int


class BackfillOutcome(TypedDict):
    created: int
    existing: int
    more: bool
    next_from_ms: NotRequired[int]


class FlowSettings(TypedDict, total=False):
    rate_per_s: Optional[float]
    burst: int
    max_in_flight: Optional[int]
    paused: bool


class StoredFlowSettings(TypedDict):
    paused: bool
    updated_ms: int
    rate_per_s: NotRequired[Optional[float]]
    burst: NotRequired[int]
    max_in_flight: NotRequired[Optional[int]]


class Flow(TypedDict):
    key: str
    configured: bool
    rate_per_s: Optional[float]
    burst: Optional[int]
    max_in_flight: Optional[int]
    paused: bool
    due: int
    due_capped: bool
    in_flight: int
    sent_last_minute: int
    delivered_last_minute: int
    throttled_last_minute: int
    lowered_rate_per_s: Optional[float]
    held_until_ms: Optional[int]
    settings: NotRequired[StoredFlowSettings]


class FlowPage(TypedDict):
    flows: List[Flow]
    next_after: NotRequired[str]


# The operator's routes (/v1/admin/..., docs/data.md). This client has no
# calls for them (the CLI has: tickwheel backup, export, import, delivery,
# writes); the shapes are here for programs that read an export.


class BackupRequest(TypedDict):
    to: str


class Backup(TypedDict):
    dir: str
    bytes: int
    files: int
    took_ms: int
    record_format: int
    server_version: str
    taken_ms: int


class AdminMode(TypedDict):
    delivery: Literal["paused", "running"]
    writes: Literal["paused", "accepted"]
    in_flight: int


class ImportConflict(TypedDict):
    line: int
    message: str
    id: NotRequired[str]
    schedule: NotRequired[str]
    flow: NotRequired[str]


class ImportResult(TypedDict):
    lines: int
    timers: int
    schedules: int
    flows: int
    created: int
    existing: int
    conflicts: List[ImportConflict]


class ExportHeader(TypedDict):
    """The first line of an export."""

    kind: Literal["export"]
    format: int
    timers: int
    server_version: NotRequired[str]
    store: NotRequired[Literal["embedded", "postgres"]]
    taken_ms: NotRequired[int]
    states: NotRequired[List[TimerState]]
    counts: NotRequired[StateCounts]


class ExportTimer(Timer):
    """A timer line of an export: the timer and its create digest."""

    kind: Literal["timer"]
    create_digest: str


class ImportTimer(TypedDict, total=False):
    """A timer line to import: an export's, or one with only its create
    body, id and state."""

    kind: Literal["timer"]
    id: Required[str]
    state: Required[TimerState]
    fire_at_ms: Required[int]
    target: Required[Target]
    next_attempt_ms: int
    attempts: int
    retry: TimerRetry
    flow: str
    payload: Any
    created_ms: int
    updated_ms: int
    last_error: str
    attempt_log: List[AttemptLogEntry]
    traceparent: str
    tracestate: str
    create_digest: str


class ExportSchedule(TypedDict):
    kind: Literal["schedule"]
    id: str
    record: str
    schedule: NotRequired[Optional[Schedule]]


class ExportFlow(TypedDict):
    kind: Literal["flow"]
    key: str
    settings: StoredFlowSettings


class ExportEnd(TypedDict):
    kind: Literal["end"]


ExportLine = Union[ExportHeader, ExportTimer, ExportSchedule, ExportFlow, ExportEnd]
ImportLine = Union[ExportHeader, ImportTimer, ExportSchedule, ExportFlow, ExportEnd]
