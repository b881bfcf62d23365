# SPDX-License-Identifier: Apache-2.0
"""The shapes of the API, one TypedDict per object schema of
docs/openapi.json (components/schemas), with the same name, the same keys
and the same required keys: tests/test_shapes.py holds them to it."""

from typing import Any, Dict, List, Literal, NotRequired, Optional, TypedDict, Union

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


class Timer(TypedDict):
    id: str
    state: TimerState
    fire_at_ms: int
    attempts: int
    retry: TimerRetry
    target: Target
    payload: Any
    created_ms: int
    updated_ms: int
    next_attempt_ms: NotRequired[int]
    last_error: NotRequired[str]
    attempt_log: NotRequired[List[AttemptLogEntry]]


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
    {"node_id": str, "started_ms": int, "expires_ms": int, "alive": bool, "shards": int, "self": bool},
)


class ShardLease(TypedDict):
    shard: int
    owner: Optional[str]
    epoch: int
    expires_ms: int
    live: bool


class ClusterState(TypedDict):
    mode: Literal["cluster"]
    node: str
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
    leases_held: NotRequired[bool]


class ErrorDetail(TypedDict):
    code: str
    message: str
    field: NotRequired[str]


class Error(TypedDict):
    error: ErrorDetail


class Delivery(TypedDict):
    """The body of a delivery attempt (what a receiver gets)."""

    id: str
    payload: Any
    fire_at_ms: int
    attempt: int
