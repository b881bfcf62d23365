# SPDX-License-Identifier: Apache-2.0
"""Client of tickwheel serve's HTTP API (docs/openapi.json)."""

import http.client
import json
import os
import secrets
import ssl
import threading
import time
import urllib.parse
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from .errors import TickwheelError, UnavailableError, error_for
from .types import (
    AdminMode,
    Backfill,
    BackfillOutcome,
    Backup,
    Cluster,
    CreateSchedule,
    CreatedTimer,
    CreateTimer,
    DeadLetterOutcome,
    ExportLine,
    Flow,
    FlowPage,
    FlowSettings,
    Health,
    ImportLine,
    ImportResult,
    PatchSchedule,
    RetryPolicy,
    Schedule,
    SchedulePage,
    ScheduleState,
    Stats,
    StatsSeries,
    Target,
    Timer,
    TimerPage,
    TimerState,
    Whoami,
)

# Called before each retry with the attempt that failed (1, 2, ...) and its
# error; for logging, metrics, tests.
RetryHook = Callable[[int, TickwheelError], None]


def new_id() -> str:
    """An id as the server makes them: 128 random bits, 32 hex digits."""
    return secrets.token_hex(16)


class Client:
    """A client of one server.

    Creates carry an id (generated here when not given), so a create whose
    answer was lost or was a 503 is sent again safely: the server answers
    200 for the same id and body. Every call is retried on a 503 and on a
    lost connection, `retries` times, after the server's Retry-After (or
    0.5 s, doubling). Errors are TickwheelError subclasses carrying the
    server's code.

    Thread safety: a Client may be shared by threads (one connection, one
    request at a time).

        client = Client("http://127.0.0.1:8080")  # token from TICKWHEEL_TOKEN
        timer = client.create({"url": "https://hooks.example.com/t"}, delay_ms=30_000,
                              payload={"order": 42})
        client.cancel(timer["id"])
    """

    def __init__(
        self,
        server: str = "http://127.0.0.1:8080",
        *,
        token: Optional[str] = None,
        ca_file: Optional[str] = None,
        timeout: float = 30.0,
        retries: int = 3,
        on_retry: Optional[RetryHook] = None,
    ):
        """`server` is http(s)://host:port; `token` defaults to the
        TICKWHEEL_TOKEN environment variable (none if unset); `ca_file`
        trusts a private CA for https:// besides the system's."""
        if "://" not in server:
            server = "http://" + server
        url = urllib.parse.urlsplit(server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"server {server!r}: expected http://host:port or https://host:port")
        self._https = url.scheme == "https"
        self._host = url.hostname
        self._port = url.port or (443 if self._https else 80)
        self._token = token if token is not None else os.environ.get("TICKWHEEL_TOKEN") or None
        self._timeout = timeout
        self._retries = retries
        self._on_retry = on_retry
        self._context = None
        if self._https:
            self._context = ssl.create_default_context(cafile=ca_file)
        self._lock = threading.Lock()
        self._conn: Optional[http.client.HTTPConnection] = None

    # Timers -------------------------------------------------------------

    def create(
        self,
        target: Target,
        *,
        delay_ms: Optional[int] = None,
        fire_at_ms: Optional[int] = None,
        id: Optional[str] = None,
        payload: Any = None,
        retry: Optional[RetryPolicy] = None,
        flow: Optional[str] = None,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
    ) -> Timer:
        """Creates a timer (exactly one of delay_ms and fire_at_ms) and
        returns it, durable. The same id and body again returns the existing
        timer; the same id with another body raises ConflictError
        (id_conflict). `flow` names its flow (docs/flows.md).
        `traceparent`/`tracestate` (W3C Trace Context: the caller's current
        span) are sent as headers of the create; the server stores them and
        sends every delivery attempt as a new span of that trace."""
        body: Dict[str, Any] = {"id": id or new_id(), "target": target}
        if delay_ms is not None:
            body["delay_ms"] = delay_ms
        if fire_at_ms is not None:
            body["fire_at_ms"] = fire_at_ms
        if payload is not None:
            body["payload"] = payload
        if retry is not None:
            body["retry"] = retry
        if flow is not None:
            body["flow"] = flow
        return self._call("POST", "/v1/timers", body, headers=_trace(traceparent, tracestate))

    def create_batch(
        self,
        timers: List[CreateTimer],
        *,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
    ) -> List[CreatedTimer]:
        """Creates several timers, all or nothing; ids are generated for
        those without one. Returns, in order, each id, state, fire time and
        whether it was new. `traceparent`/`tracestate` are every timer's."""
        with_ids = [dict(t, id=t.get("id") or new_id()) for t in timers]
        answer = self._call("POST", "/v1/timers:batch", {"timers": with_ids},
                            headers=_trace(traceparent, tracestate))
        return answer["timers"]

    def get(self, id: str, *, show_headers: bool = False) -> Timer:
        """The timer (NotFoundError if there is none)."""
        return self._call("GET", _timer_path(id) + ("?show_headers=true" if show_headers else ""))

    def list_page(
        self,
        state: TimerState,
        *,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        prefix: Optional[str] = None,
        host: Optional[str] = None,
        show_headers: bool = False,
    ) -> TimerPage:
        """One page of the timers in `state`; pass its next_after as `after`
        for the next."""
        query: Dict[str, str] = {"state": state}
        if limit is not None:
            query["limit"] = str(limit)
        if after is not None:
            query["after"] = after
        if prefix is not None:
            query["prefix"] = prefix
        if host is not None:
            query["host"] = host
        if show_headers:
            query["show_headers"] = "true"
        return self._call("GET", "/v1/timers?" + urllib.parse.urlencode(query))

    def list(self, state: TimerState, **filters: Any) -> Iterator[Timer]:
        """Every timer in `state` (with list_page's filters), page after
        page: the next page is asked for when this one is used up."""
        after = filters.pop("after", None)
        return _pages(lambda a: self.list_page(state, after=a, **filters), "timers", after)

    def reschedule(self, id: str, *, delay_ms: Optional[int] = None,
                   fire_at_ms: Optional[int] = None) -> Timer:
        """Moves a pending timer (ConflictError not_pending otherwise)."""
        body: Dict[str, Any] = {}
        if delay_ms is not None:
            body["delay_ms"] = delay_ms
        if fire_at_ms is not None:
            body["fire_at_ms"] = fire_at_ms
        return self._call("PATCH", _timer_path(id), body)

    def cancel(self, id: str) -> Timer:
        """Cancels a pending timer (a cancelled one is returned unchanged;
        ConflictError not_pending for one delivering, delivered or failed)."""
        return self._call("DELETE", _timer_path(id))

    def retry(self, id: str) -> Timer:
        """Re-arms a dead letter now (ConflictError not_failed otherwise)."""
        return self._call("POST", _timer_path(id) + ":retry")

    # Dead letters in bulk ------------------------------------------------

    def retry_failed(self, *, prefix: Optional[str] = None, host: Optional[str] = None,
                     all: bool = False, dry_run: bool = False,
                     failed_before_ms: Optional[int] = None) -> DeadLetterOutcome:
        """Re-arms the dead letters matching the filter (every one with
        all=True), at most 10,000 a call: while the answer's `more`, call
        again with its failed_before_ms (or use retry_all_failed)."""
        return self._call("POST", "/v1/timers:retry-failed",
                          _filter(prefix, host, all, dry_run, failed_before_ms))

    def delete_failed(self, *, prefix: Optional[str] = None, host: Optional[str] = None,
                      all: bool = False, dry_run: bool = False,
                      failed_before_ms: Optional[int] = None) -> DeadLetterOutcome:
        """Deletes the dead letters matching prefix/host, or every one with
        all=True (one of them is required), as retry_failed."""
        return self._call("POST", "/v1/timers:delete-failed",
                          _filter(prefix, host, all, dry_run, failed_before_ms))

    def retry_all_failed(self, **filters: Any) -> int:
        """retry_failed until nothing more matches; the number re-armed."""
        return self._until_done(self.retry_failed, filters)

    def delete_all_failed(self, **filters: Any) -> int:
        """delete_failed until nothing more matches; the number deleted."""
        return self._until_done(self.delete_failed, filters)

    # Schedules (docs/schedules.md) ----------------------------------------

    def create_schedule(self, schedule: CreateSchedule) -> Schedule:
        """Creates a schedule (exactly one of every_ms and cron); the same
        body again returns it as it is, another body under its id raises
        ConflictError (id_conflict)."""
        return self._call("POST", "/v1/schedules", schedule)

    def get_schedule(self, id: str, *, next: Optional[int] = None,
                     show_headers: bool = False) -> Schedule:
        """The schedule with its `next` upcoming times (default 5, 0..100)."""
        query: Dict[str, str] = {}
        if next is not None:
            query["next"] = str(next)
        if show_headers:
            query["show_headers"] = "true"
        return self._call("GET", _path("/v1/schedules/", id) + _query(query))

    def list_schedules_page(self, *, state: Optional[ScheduleState] = None,
                            prefix: Optional[str] = None, limit: Optional[int] = None,
                            after: Optional[str] = None, show_headers: bool = False) -> SchedulePage:
        """One page of schedules in id order; pass its next_after as `after`."""
        query: Dict[str, str] = {}
        for key, value in (("state", state), ("prefix", prefix), ("after", after)):
            if value is not None:
                query[key] = value
        if limit is not None:
            query["limit"] = str(limit)
        if show_headers:
            query["show_headers"] = "true"
        return self._call("GET", "/v1/schedules" + _query(query))

    def list_schedules(self, **filters: Any) -> Iterator[Schedule]:
        """Every schedule (with list_schedules_page's filters), page after page."""
        after = filters.pop("after", None)
        return _pages(lambda a: self.list_schedules_page(after=a, **filters), "schedules", after)

    def update_schedule(self, id: str, change: PatchSchedule) -> Schedule:
        """Changes what is given (the rest stays)."""
        return self._call("PATCH", _path("/v1/schedules/", id), change)

    def delete_schedule(self, id: str) -> Schedule:
        """Deletes it (its pending occurrence is cancelled); the schedule as it was."""
        return self._call("DELETE", _path("/v1/schedules/", id))

    def pause_schedule(self, id: str) -> Schedule:
        return self._call("POST", _path("/v1/schedules/", id) + ":pause")

    def resume_schedule(self, id: str) -> Schedule:
        return self._call("POST", _path("/v1/schedules/", id) + ":resume")

    def trigger_schedule(self, id: str) -> Timer:
        """An occurrence now, besides the planned ones: the timer `<id>@<now>`."""
        return self._call("POST", _path("/v1/schedules/", id) + ":trigger")

    def backfill_schedule(self, id: str, *, from_ms: int, to_ms: int) -> BackfillOutcome:
        """Creates the occurrences of [from_ms, to_ms) that were not there;
        while the answer's `more`, call again from its next_from_ms."""
        body: Backfill = {"from_ms": from_ms, "to_ms": to_ms}
        return self._call("POST", _path("/v1/schedules/", id) + ":backfill", body)

    # Flows (docs/flows.md) --------------------------------------------------

    def list_flows_page(self, *, after: Optional[str] = None, limit: Optional[int] = None) -> FlowPage:
        """One page of the configured flows and those active in the last
        minute, by key."""
        query: Dict[str, str] = {}
        if after is not None:
            query["after"] = after
        if limit is not None:
            query["limit"] = str(limit)
        return self._call("GET", "/v1/flows" + _query(query))

    def list_flows(self, *, limit: Optional[int] = None) -> Iterator[Flow]:
        """Every flow, page after page."""
        return _pages(lambda a: self.list_flows_page(after=a, limit=limit), "flows", None)

    def get_flow(self, key: str) -> Flow:
        """The flow (one without settings shows the defaults)."""
        return self._call("GET", _path("/v1/flows/", key))

    def set_flow(self, key: str, settings: FlowSettings) -> Flow:
        """Stores the flow's settings (what is not given takes the defaults)."""
        return self._call("PUT", _path("/v1/flows/", key), settings)

    def reset_flow(self, key: str) -> Flow:
        """Back to the server's defaults."""
        return self._call("DELETE", _path("/v1/flows/", key))

    def pause_flow(self, key: str) -> Flow:
        return self._call("POST", _path("/v1/flows/", key) + ":pause")

    def resume_flow(self, key: str) -> Flow:
        return self._call("POST", _path("/v1/flows/", key) + ":resume")

    # The operator's routes (docs/data.md; an admin token) -----------------

    def backup(self, to: str) -> Backup:
        """A hot backup of the embedded store into `to`, a new directory by
        absolute path on the server's machine (BadRequestError on a cluster
        node: use pg_dump)."""
        return self._call("POST", "/v1/admin/backup", {"to": to})

    def export_page(self, *, states: Optional[List[TimerState]] = None, limit: Optional[int] = None,
                    cursor: Optional[str] = None) -> Tuple[List[ExportLine], Optional[str]]:
        """One page of an export: its lines and the cursor of the next page
        (None on the last). The first page without `cursor` (`states`: every
        state, and the schedules and flows, when None); the next ones with
        the cursor (NotFoundError export_expired for an export idle 5
        minutes)."""
        query: Dict[str, str] = {}
        if states is not None and cursor is None:
            query["state"] = ",".join(states)
        if limit is not None:
            query["limit"] = str(limit)
        if cursor is not None:
            query["cursor"] = cursor
        headers, raw = self._call_raw("GET", "/v1/admin/export" + _query(query), None,
                                      {"Accept": "application/x-ndjson"})
        lines = [json.loads(line) for line in raw.splitlines() if line.strip()]
        return lines, headers.get("tickwheel-export-cursor")

    def export(self, *, states: Optional[List[TimerState]] = None,
               limit: Optional[int] = None) -> Iterator[ExportLine]:
        """Every line of an export from one snapshot, page after page: the
        header, the timers in id order, then (exporting every state) the
        schedules and flows and `end`."""
        lines, cursor = self.export_page(states=states, limit=limit)
        yield from lines
        while cursor is not None:
            lines, cursor = self.export_page(limit=limit, cursor=cursor)
            yield from lines

    def import_records(self, lines: List[ImportLine]) -> ImportResult:
        """Writes the lines (an export's, or timers with only their create
        body, id and state) in one durable request of at most --max-batch
        lines: what was created, what existed, the conflicts. Importing the
        same lines again creates nothing new."""
        body = "".join(json.dumps(line) + "\n" for line in lines).encode()
        return json.loads(self._call_raw("POST", "/v1/admin/import", body, {})[1])

    def pause_delivery(self) -> AdminMode:
        """No timer is fired until resume_delivery (waits for attempts in
        flight up to --drain-timeout)."""
        return self._call("POST", "/v1/admin/delivery:pause")

    def resume_delivery(self) -> AdminMode:
        return self._call("POST", "/v1/admin/delivery:resume")

    def pause_writes(self) -> AdminMode:
        """Clients' writes answer 503 writes_paused until resume_writes."""
        return self._call("POST", "/v1/admin/writes:pause")

    def resume_writes(self) -> AdminMode:
        return self._call("POST", "/v1/admin/writes:resume")

    # The server -----------------------------------------------------------

    def stats(self) -> Stats:
        return self._call("GET", "/v1/stats")

    def stats_series(self) -> StatsSeries:
        return self._call("GET", "/v1/stats/series")

    def cluster(self) -> Cluster:
        return self._call("GET", "/v1/cluster")

    def whoami(self) -> Whoami:
        return self._call("GET", "/v1/whoami")

    def health(self) -> Health:
        return self._call("GET", "/healthz")

    def openapi(self) -> Dict[str, Any]:
        """The server's own description of its API (OpenAPI 3.1)."""
        return self._call("GET", "/v1/openapi.json")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # Transport ------------------------------------------------------------

    @staticmethod
    def _until_done(call: Callable[..., DeadLetterOutcome], filters: Dict[str, Any]) -> int:
        total = 0
        while True:
            outcome = call(**filters)
            total += outcome["done"]
            if not outcome["more"] or outcome["dry_run"]:
                return total
            filters = dict(filters, failed_before_ms=outcome["failed_before_ms"])

    def _call(self, method: str, path: str, body: Any = None,
              headers: Optional[Dict[str, str]] = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        raw = self._call_raw(method, path, data, headers or {})[1]
        return json.loads(raw) if raw else None

    def _call_raw(self, method: str, path: str, data: Optional[bytes],
                  headers: Dict[str, str]) -> Tuple[Dict[str, str], bytes]:
        """The answer's headers (lower-case names) and body of a 2xx;
        retries a 503 or no answer, raises the error of any other status."""
        send = {"Accept": "application/json", "User-Agent": "tickwheel-python/0.2.0"}
        if data is not None:
            send["Content-Type"] = "application/json"
        if self._token:
            send["Authorization"] = "Bearer " + self._token
        send.update(headers)
        attempt = 0
        while True:
            attempt += 1
            retry_after: Optional[float] = None
            try:
                status, answer_headers, raw = self._exchange(method, path, data, send)
            except (OSError, http.client.HTTPException) as e:
                error: TickwheelError = UnavailableError(
                    0, "connection", f"no answer from {self._host}:{self._port}: {e}")
            else:
                if 200 <= status < 300:
                    return answer_headers, raw
                error = _error(status, raw)
                if status != 503:
                    raise error
                value = answer_headers.get("retry-after", "")
                retry_after = float(value) if value.isdigit() else None
            if attempt > self._retries:
                raise error
            if self._on_retry is not None:
                self._on_retry(attempt, error)
            time.sleep(min(retry_after if retry_after is not None else 0.5 * 2 ** (attempt - 1), 30.0))

    def _exchange(self, method: str, path: str, data: Optional[bytes],
                  headers: Dict[str, str]):
        with self._lock:
            for fresh in (False, True):
                if self._conn is None:
                    fresh = True
                    if self._https:
                        self._conn = http.client.HTTPSConnection(
                            self._host, self._port, timeout=self._timeout, context=self._context)
                    else:
                        self._conn = http.client.HTTPConnection(self._host, self._port,
                                                                timeout=self._timeout)
                try:
                    self._conn.request(method, path, body=data, headers=headers)
                    res = self._conn.getresponse()
                    raw = res.read()
                    answer = {k.lower(): v for k, v in res.getheaders()}
                    if res.will_close:
                        self._conn.close()
                        self._conn = None
                    return res.status, answer, raw
                except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                    # A kept-alive connection the server closed: once more on a
                    # new one (the server had not read the request).
                    self._conn.close()
                    self._conn = None
                    if fresh:
                        raise
                except BaseException:
                    self._conn.close()
                    self._conn = None
                    raise
            raise AssertionError("unreachable")


def _pages(fetch: Callable[[Optional[str]], Any], key: str, after: Optional[str]) -> Iterator[Any]:
    """The items under `key` of page after page: fetch(after) with the
    page before's next_after, until a page has none."""
    while True:
        page = fetch(after)
        yield from page[key]
        after = page.get("next_after")
        if after is None:
            return


def _timer_path(id: str) -> str:
    return _path("/v1/timers/", id)


def _path(collection: str, id: str) -> str:
    return collection + urllib.parse.quote(id, safe="")


def _query(query: Dict[str, str]) -> str:
    return "?" + urllib.parse.urlencode(query) if query else ""


def _trace(traceparent: Optional[str], tracestate: Optional[str]) -> Dict[str, str]:
    headers = {}
    if traceparent:
        headers["traceparent"] = traceparent
        if tracestate:
            headers["tracestate"] = tracestate
    return headers


def _filter(prefix, host, all_, dry_run, failed_before_ms) -> Dict[str, Any]:
    body: Dict[str, Any] = {}
    if prefix is not None:
        body["prefix"] = prefix
    if host is not None:
        body["host"] = host
    if all_:
        body["all"] = True
    if dry_run:
        body["dry_run"] = True
    if failed_before_ms is not None:
        body["failed_before_ms"] = failed_before_ms
    return body


def _error(status: int, raw: bytes) -> TickwheelError:
    try:
        detail = json.loads(raw)["error"]
        return error_for(status, detail["code"], detail["message"], detail.get("field"))
    except (ValueError, KeyError, TypeError):
        return error_for(status, f"http_{status}", raw.decode("utf-8", "replace")[:200] or f"HTTP {status}")
