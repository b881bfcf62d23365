// SPDX-License-Identifier: Apache-2.0
// The errors of the client: one class per kind of answer, each carrying the
// server's error code (docs/server.md, Errors).
import type { ErrorDetail } from "./types.js";

/** A code of the server's error table, `connection` when no answer came,
 * or `http_<status>` for an answer without the server's error body. */
export type ErrorCode = ErrorDetail["code"] | "connection" | `http_${number}`;

/**
 * An error answer of the server, or no answer at all. `status` is the HTTP
 * status (0 when no answer came), `code` the server's stable error code
 * (`negative_delay`, `not_found`, ...), `field` the offending field when
 * there is one.
 */
export class TickwheelError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly field: string | undefined;

  constructor(status: number, code: ErrorCode, message: string, field?: string) {
    super(`${code}: ${message}${field ? ` (field ${field})` : ""}`);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

/** 400: bad input, named by `field`; nothing was stored. */
export class BadRequestError extends TickwheelError {}
/** 401: no token, or one the server does not know (TICKWHEEL_TOKEN). */
export class UnauthorizedError extends TickwheelError {}
/** 403: a read token asked for a write. */
export class ForbiddenError extends TickwheelError {}
/** 404: no such timer, schedule or export. */
export class NotFoundError extends TickwheelError {}
/** 409: id_conflict (the id exists with another body), not_pending,
 * not_failed, backup_exists, ... */
export class ConflictError extends TickwheelError {}
/** 413: a payload, batch or body over the server's limits. */
export class TooLargeError extends TickwheelError {}
/** 503 (store_unavailable, overloaded, draining, writes_paused) still,
 * after the retries; or no answer (status 0, code `connection`). */
export class UnavailableError extends TickwheelError {}
/** Any other status (500 store_corrupt, ...). */
export class ServerError extends TickwheelError {}

const BY_STATUS: Record<number, typeof TickwheelError> = {
  400: BadRequestError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  409: ConflictError,
  413: TooLargeError,
  503: UnavailableError,
};

/** The error class for `status`, made with the server's code. */
export function errorFor(status: number, code: ErrorCode, message: string, field?: string): TickwheelError {
  return new (BY_STATUS[status] ?? ServerError)(status, code, message, field);
}
