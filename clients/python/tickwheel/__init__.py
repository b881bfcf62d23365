# SPDX-License-Identifier: Apache-2.0
"""tickwheel: a client of tickwheel serve (durable timers over HTTP) and a
verifier of its signed deliveries. Standard library only."""

from .client import Client, new_id
from .errors import (
    BadRequestError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    ServerError,
    TickwheelError,
    TooLargeError,
    UnauthorizedError,
    UnavailableError,
)
from .webhooks import WebhookVerificationError, verify_webhook

__all__ = [
    "BadRequestError", "Client", "ConflictError", "ForbiddenError", "NotFoundError",
    "ServerError", "TickwheelError", "TooLargeError", "UnauthorizedError", "UnavailableError",
    "WebhookVerificationError", "new_id", "verify_webhook",
]
__version__ = "0.2.0"
