# SPDX-License-Identifier: Apache-2.0
"""The errors of the client: one class per kind of answer, each carrying the
server's error code (docs/server.md, Errors)."""

from typing import Optional


class TickwheelError(Exception):
    """An error answer of the server, or no answer at all.

    `status` is the HTTP status (0 when no answer came), `code` the server's
    stable error code (``negative_delay``, ``not_found``, ...; ``connection``
    when no answer came), `field` the offending field when there is one.
    """

    def __init__(self, status: int, code: str, message: str, field: Optional[str] = None):
        super().__init__(f"{code}: {message}" + (f" (field {field})" if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field


class BadRequestError(TickwheelError):
    """400: bad input, named by `field`; nothing was stored."""


class UnauthorizedError(TickwheelError):
    """401: no token, or one the server does not know (TICKWHEEL_TOKEN)."""


class ForbiddenError(TickwheelError):
    """403: a read token asked for a write."""


class NotFoundError(TickwheelError):
    """404: no such timer."""


class ConflictError(TickwheelError):
    """409: id_conflict (the id exists with another body), not_pending,
    not_failed."""


class TooLargeError(TickwheelError):
    """413: a payload, batch or body over the server's limits."""


class UnavailableError(TickwheelError):
    """503 (store_unavailable, overloaded, ...) still, after the retries; or
    the server could not be reached (status 0, code "connection")."""


class ServerError(TickwheelError):
    """Any other status (500 store_corrupt, ...)."""


_BY_STATUS = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    413: TooLargeError,
    503: UnavailableError,
}


def error_for(status: int, code: str, message: str, field: Optional[str] = None) -> TickwheelError:
    """The error class for `status`, made with the server's code."""
    return _BY_STATUS.get(status, ServerError)(status, code, message, field)
