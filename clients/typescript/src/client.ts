// SPDX-License-Identifier: Apache-2.0
// Client of tickwheel serve's HTTP API (docs/openapi.json), on fetch.
import { TickwheelError, UnavailableError, errorFor } from "./errors.js";
import { webCrypto } from "./crypto.js";
import type {
  AdminMode, Backfill, BackfillOutcome, Backup, Cluster, CreateSchedule, CreateTimer, CreatedTimer,
  CreatedTimers, DeadLetterFilter, DeadLetterOutcome, ErrorDetail, ExportLine, Flow, FlowPage,
  FlowSettings, Health, ImportLine, ImportResult, PatchSchedule, Reschedule, Schedule, SchedulePage,
  ScheduleState, Stats, StatsSeries, Timer, TimerPage, TimerState, Whoami,
} from "./types.js";

/** Called before each retry with the attempt that failed (1, 2, ...) and
 * its error; for logging, metrics, tests. */
export type RetryHook = (attempt: number, error: TickwheelError) => void;

export interface ClientOptions {
  /** The bearer token; default the TICKWHEEL_TOKEN environment variable
   * in Node (none if unset; none in a browser). */
  token?: string;
  /** How long one attempt may take; default 30,000. */
  timeoutMs?: number;
  /** Attempts after the first on a 503 or no answer; default 3. */
  retries?: number;
  onRetry?: RetryHook;
  /** Default globalThis.fetch. */
  fetch?: typeof fetch;
}

/** W3C Trace Context of the caller, sent as headers of a create. */
export interface Trace {
  traceparent?: string;
  tracestate?: string;
}

export interface TimerFilter {
  limit?: number;
  prefix?: string;
  /** Timers whose target's host (or NATS subject) is this. */
  host?: string;
  /** Target header values in clear (an admin token only). */
  showHeaders?: boolean;
}

export interface ScheduleFilter {
  state?: ScheduleState;
  prefix?: string;
  limit?: number;
  showHeaders?: boolean;
}

export interface ExportOptions {
  /** The states to export; every one (and the schedules and flows) when
   * absent. */
  states?: TimerState[];
  /** Records a page holds at most (1..10,000; default 1,000). */
  limit?: number;
}

/** One page of an export: its lines, and the cursor of the next page
 * while there is one. */
export interface ExportPage {
  lines: ExportLine[];
  cursor?: string;
}

/** An id as the server makes them: 128 random bits, 32 hex digits. */
export async function newId(): Promise<string> {
  const bits = (await webCrypto()).getRandomValues(new Uint8Array(16));
  return Array.from(bits, (b) => b.toString(16).padStart(2, "0")).join("");
}

function environmentToken(): string | undefined {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return process?.env?.TICKWHEEL_TOKEN || undefined;
}

function query(values: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) {
    if (v !== undefined && v !== false) q.set(k, String(v));
  }
  const text = q.toString();
  return text ? `?${text}` : "";
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * A client of one server.
 *
 * Creates carry an id (generated here when not given), so a create whose
 * answer was lost or was a 503 is sent again safely: the server answers
 * 200 for the same id and body. Every call is retried on a 503 and on no
 * answer, `retries` times, after the server's Retry-After (or 0.5 s,
 * doubling). Errors are TickwheelError subclasses carrying the server's
 * code.
 *
 *     const client = new Client("http://127.0.0.1:8080"); // token: TICKWHEEL_TOKEN
 *     const timer = await client.create({ target: { url: "https://hooks.example.com/t" },
 *                                         delay_ms: 30_000, payload: { order: 42 } });
 *     await client.cancel(timer.id);
 */
export class Client {
  readonly server: string;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #onRetry: RetryHook | undefined;
  readonly #fetch: typeof fetch;

  /** `server` is http(s)://host:port. For https:// with a private CA in
   * Node, start it with NODE_EXTRA_CA_CERTS=ca.pem. */
  constructor(server = "http://127.0.0.1:8080", options: ClientOptions = {}) {
    const url = new URL(server.includes("://") ? server : `http://${server}`);
    if ((url.protocol !== "http:" && url.protocol !== "https:") || !url.hostname) {
      throw new TypeError(`server ${JSON.stringify(server)}: expected http://host:port or https://host:port`);
    }
    this.server = url.origin;
    this.#token = options.token ?? environmentToken();
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#retries = options.retries ?? 3;
    this.#onRetry = options.onRetry;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  // Timers -------------------------------------------------------------

  /** Creates a timer (exactly one of delay_ms and fire_at_ms) and returns
   * it, durable. The same id and body again returns the existing timer;
   * the same id with another body rejects with ConflictError
   * (id_conflict). */
  async create(timer: CreateTimer, trace?: Trace): Promise<Timer> {
    return this.#json("POST", "/v1/timers", { ...timer, id: timer.id || (await newId()) }, trace);
  }

  /** Creates several timers, all or nothing; ids are generated for those
   * without one. Returns, in order, each id, state, fire time and whether
   * it was new. */
  async createBatch(timers: CreateTimer[], trace?: Trace): Promise<CreatedTimer[]> {
    const withIds = await Promise.all(timers.map(async (t) => ({ ...t, id: t.id || (await newId()) })));
    const answer = await this.#json<CreatedTimers>("POST", "/v1/timers:batch", { timers: withIds }, trace);
    return answer.timers;
  }

  /** The timer (NotFoundError if there is none). */
  get(id: string, options: { showHeaders?: boolean } = {}): Promise<Timer> {
    return this.#json("GET", timerPath(id) + query({ show_headers: options.showHeaders }));
  }

  /** One page of the timers in `state`; pass its next_after as `after`
   * for the next. */
  listPage(state: TimerState, filter: TimerFilter & { after?: string } = {}): Promise<TimerPage> {
    return this.#json("GET", "/v1/timers" + query({
      state, limit: filter.limit, after: filter.after, prefix: filter.prefix, host: filter.host,
      show_headers: filter.showHeaders,
    }));
  }

  /** Every timer in `state`, page after page: the next page is asked for
   * when this one is used up. */
  list(state: TimerState, filter: TimerFilter = {}): AsyncGenerator<Timer> {
    return pages((after) => this.listPage(state, { ...filter, after }),
      (page) => page.timers, (page) => page.next_after);
  }

  /** Moves a pending timer (ConflictError not_pending otherwise). */
  reschedule(id: string, when: Reschedule): Promise<Timer> {
    return this.#json("PATCH", timerPath(id), when);
  }

  /** Cancels a pending timer (a cancelled one is returned unchanged;
   * ConflictError not_pending for one delivering, delivered or failed). */
  cancel(id: string): Promise<Timer> {
    return this.#json("DELETE", timerPath(id));
  }

  /** Re-arms a dead letter now (ConflictError not_failed otherwise). */
  retry(id: string): Promise<Timer> {
    return this.#json("POST", timerPath(id) + ":retry");
  }

  // Dead letters in bulk ------------------------------------------------

  /** Re-arms the dead letters matching the filter (every one with
   * all: true), at most 10,000 a call: while the answer's `more`, call
   * again with its failed_before_ms (or use retryAllFailed). */
  retryFailed(filter: DeadLetterFilter): Promise<DeadLetterOutcome> {
    return this.#json("POST", "/v1/timers:retry-failed", filter);
  }

  /** Deletes the dead letters matching prefix/host, or every one with
   * all: true (one of them is required), as retryFailed. */
  deleteFailed(filter: DeadLetterFilter): Promise<DeadLetterOutcome> {
    return this.#json("POST", "/v1/timers:delete-failed", filter);
  }

  /** retryFailed until nothing more matches; the number re-armed. */
  retryAllFailed(filter: DeadLetterFilter): Promise<number> {
    return untilDone((f) => this.retryFailed(f), filter);
  }

  /** deleteFailed until nothing more matches; the number deleted. */
  deleteAllFailed(filter: DeadLetterFilter): Promise<number> {
    return untilDone((f) => this.deleteFailed(f), filter);
  }

  // Schedules (docs/schedules.md) ---------------------------------------

  /** Creates a schedule (exactly one of every_ms and cron); the same body
   * again returns it as it is, another body under its id is a
   * ConflictError (id_conflict). */
  createSchedule(schedule: CreateSchedule): Promise<Schedule> {
    return this.#json("POST", "/v1/schedules", schedule);
  }

  /** The schedule with its `next` upcoming times (default 5, 0..100). */
  getSchedule(id: string, options: { next?: number; showHeaders?: boolean } = {}): Promise<Schedule> {
    return this.#json("GET", schedulePath(id) + query({ next: options.next, show_headers: options.showHeaders }));
  }

  /** One page of schedules in id order. */
  listSchedulesPage(filter: ScheduleFilter & { after?: string } = {}): Promise<SchedulePage> {
    return this.#json("GET", "/v1/schedules" + query({
      state: filter.state, prefix: filter.prefix, limit: filter.limit, after: filter.after,
      show_headers: filter.showHeaders,
    }));
  }

  /** Every schedule matching the filter, page after page. */
  listSchedules(filter: ScheduleFilter = {}): AsyncGenerator<Schedule> {
    return pages((after) => this.listSchedulesPage({ ...filter, after }),
      (page) => page.schedules, (page) => page.next_after);
  }

  /** Changes what is given (the rest stays). */
  updateSchedule(id: string, change: PatchSchedule): Promise<Schedule> {
    return this.#json("PATCH", schedulePath(id), change);
  }

  /** Deletes it (its pending occurrence is cancelled); the schedule as it
   * was. */
  deleteSchedule(id: string): Promise<Schedule> {
    return this.#json("DELETE", schedulePath(id));
  }

  pauseSchedule(id: string): Promise<Schedule> {
    return this.#json("POST", schedulePath(id) + ":pause");
  }

  resumeSchedule(id: string): Promise<Schedule> {
    return this.#json("POST", schedulePath(id) + ":resume");
  }

  /** An occurrence now, besides the planned ones: the timer
   * `<id>@<now>`. */
  triggerSchedule(id: string): Promise<Timer> {
    return this.#json("POST", schedulePath(id) + ":trigger");
  }

  /** Creates the occurrences of [from_ms, to_ms) that were not there;
   * while the answer's `more`, call again from its next_from_ms. */
  backfillSchedule(id: string, range: Backfill): Promise<BackfillOutcome> {
    return this.#json("POST", schedulePath(id) + ":backfill", range);
  }

  // Flows (docs/flows.md) -------------------------------------------------

  /** One page of the configured flows and those active in the last
   * minute, by key. */
  listFlowsPage(options: { after?: string; limit?: number } = {}): Promise<FlowPage> {
    return this.#json("GET", "/v1/flows" + query({ after: options.after, limit: options.limit }));
  }

  /** Every flow, page after page. */
  listFlows(options: { limit?: number } = {}): AsyncGenerator<Flow> {
    return pages((after) => this.listFlowsPage({ ...options, after }),
      (page) => page.flows, (page) => page.next_after);
  }

  /** The flow (one without settings shows the defaults). */
  getFlow(key: string): Promise<Flow> {
    return this.#json("GET", flowPath(key));
  }

  /** Stores the flow's settings (what is not given takes the defaults). */
  setFlow(key: string, settings: FlowSettings): Promise<Flow> {
    return this.#json("PUT", flowPath(key), settings);
  }

  /** Back to the server's defaults. */
  resetFlow(key: string): Promise<Flow> {
    return this.#json("DELETE", flowPath(key));
  }

  pauseFlow(key: string): Promise<Flow> {
    return this.#json("POST", flowPath(key) + ":pause");
  }

  resumeFlow(key: string): Promise<Flow> {
    return this.#json("POST", flowPath(key) + ":resume");
  }

  // The operator's routes (docs/data.md; an admin token) ------------------

  /** A hot backup of the embedded store into `to`, a new directory by
   * absolute path on the server's machine (BadRequestError on a cluster
   * node: use pg_dump). */
  backup(to: string): Promise<Backup> {
    return this.#json("POST", "/v1/admin/backup", { to });
  }

  /** One page of an export: the first without `cursor`, the next ones
   * with the cursor of the page before (NotFoundError export_expired for
   * an export idle 5 minutes). */
  async exportPage(options: ExportOptions & { cursor?: string } = {}): Promise<ExportPage> {
    const path = "/v1/admin/export" + query({
      state: options.cursor === undefined && options.states ? options.states.join(",") : undefined,
      limit: options.limit, cursor: options.cursor,
    });
    const answer = await this.#call("GET", path, undefined, { Accept: "application/x-ndjson" });
    const lines = answer.text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l) as ExportLine);
    const cursor = answer.headers.get("tickwheel-export-cursor") ?? undefined;
    return cursor === undefined ? { lines } : { lines, cursor };
  }

  /** Every line of an export from one snapshot, page after page: the
   * header, the timers in id order, then (exporting every state) the
   * schedules and flows and `end`. */
  exportRecords(options: ExportOptions = {}): AsyncGenerator<ExportLine> {
    return pages((cursor) => this.exportPage({ ...options, cursor }),
      (page) => page.lines, (page) => page.cursor);
  }

  /** Writes the lines (an export's, or timers with only their create
   * body, id and state) in one durable request of at most --max-batch
   * lines: what was created, what existed, the conflicts. Importing the
   * same lines again creates nothing new. */
  importRecords(lines: ImportLine[]): Promise<ImportResult> {
    const body = lines.map((l) => JSON.stringify(l)).join("\n") + "\n";
    return this.#json("POST", "/v1/admin/import", body);
  }

  /** No timer is fired until resumeDelivery (waits for attempts in flight
   * up to --drain-timeout). */
  pauseDelivery(): Promise<AdminMode> {
    return this.#json("POST", "/v1/admin/delivery:pause");
  }

  resumeDelivery(): Promise<AdminMode> {
    return this.#json("POST", "/v1/admin/delivery:resume");
  }

  /** Clients' writes answer 503 writes_paused until resumeWrites. */
  pauseWrites(): Promise<AdminMode> {
    return this.#json("POST", "/v1/admin/writes:pause");
  }

  resumeWrites(): Promise<AdminMode> {
    return this.#json("POST", "/v1/admin/writes:resume");
  }

  // The server -------------------------------------------------------------

  stats(): Promise<Stats> {
    return this.#json("GET", "/v1/stats");
  }

  statsSeries(): Promise<StatsSeries> {
    return this.#json("GET", "/v1/stats/series");
  }

  cluster(): Promise<Cluster> {
    return this.#json("GET", "/v1/cluster");
  }

  whoami(): Promise<Whoami> {
    return this.#json("GET", "/v1/whoami");
  }

  health(): Promise<Health> {
    return this.#json("GET", "/healthz");
  }

  /** The server's own description of its API (OpenAPI 3.1). */
  openapi(): Promise<Record<string, unknown>> {
    return this.#json("GET", "/v1/openapi.json");
  }

  // Transport ------------------------------------------------------------

  async #json<T>(method: string, path: string, body?: unknown, trace?: Trace): Promise<T> {
    const headers: Record<string, string> = {};
    if (trace?.traceparent) {
      headers.traceparent = trace.traceparent;
      if (trace.tracestate) headers.tracestate = trace.tracestate;
    }
    const answer = await this.#call(method, path, body, headers);
    return (answer.text ? JSON.parse(answer.text) : undefined) as T;
  }

  async #call(method: string, path: string, body: unknown, extra: Record<string, string>): Promise<Answer> {
    const headers: Record<string, string> = { Accept: "application/json", ...extra };
    let data: string | undefined;
    if (body !== undefined) {
      data = typeof body === "string" ? body : JSON.stringify(body);
      headers["Content-Type"] = "application/json";
    }
    if (this.#token) headers.Authorization = `Bearer ${this.#token}`;
    for (let attempt = 1; ; attempt++) {
      let error: TickwheelError;
      let retryAfterMs: number | undefined;
      try {
        const res = await this.#fetch(this.server + path, {
          method, headers, body: data, signal: AbortSignal.timeout(this.#timeoutMs),
        });
        const text = await res.text();
        if (res.ok) return { status: res.status, headers: res.headers, text };
        error = parseError(res.status, text);
        if (res.status !== 503) throw error;
        const value = res.headers.get("retry-after") ?? "";
        if (/^[0-9]+$/.test(value)) retryAfterMs = Number(value) * 1000;
      } catch (e) {
        if (e instanceof TickwheelError) throw e;
        const reason = e instanceof Error ? (e.cause instanceof Error ? `${e.message}: ${e.cause.message}` : e.message) : String(e);
        error = new UnavailableError(0, "connection", `no answer from ${this.server}: ${reason}`);
      }
      if (attempt > this.#retries) throw error;
      this.#onRetry?.(attempt, error);
      await sleep(Math.min(retryAfterMs ?? 500 * 2 ** (attempt - 1), 30_000));
    }
  }
}

/** The items of page after page: fetchPage(after) with what `next` takes
 * of the page before, until it takes nothing. */
async function* pages<P, T>(
  fetchPage: (after: string | undefined) => Promise<P>,
  items: (page: P) => T[],
  next: (page: P) => string | undefined,
): AsyncGenerator<T> {
  let after: string | undefined;
  do {
    const page = await fetchPage(after);
    yield* items(page);
    after = next(page);
  } while (after !== undefined);
}

async function untilDone(
  call: (filter: DeadLetterFilter) => Promise<DeadLetterOutcome>, filter: DeadLetterFilter,
): Promise<number> {
  let total = 0;
  for (let f = filter; ;) {
    const outcome = await call(f);
    total += outcome.done;
    if (!outcome.more || outcome.dry_run) return total;
    f = { ...f, failed_before_ms: outcome.failed_before_ms };
  }
}

function timerPath(id: string): string {
  return `/v1/timers/${encodeURIComponent(id)}`;
}

function schedulePath(id: string): string {
  return `/v1/schedules/${encodeURIComponent(id)}`;
}

function flowPath(key: string): string {
  return `/v1/flows/${encodeURIComponent(key)}`;
}

function parseError(status: number, text: string): TickwheelError {
  try {
    const detail = (JSON.parse(text) as { error: ErrorDetail }).error;
    if (typeof detail.code === "string" && typeof detail.message === "string") {
      return errorFor(status, detail.code, detail.message, detail.field);
    }
  } catch {
    // not the server's error body: below
  }
  return errorFor(status, `http_${status}`, text.slice(0, 200) || `HTTP ${status}`);
}
