# SPDX-License-Identifier: Apache-2.0
"""Verifying a signed tickwheel delivery in a receiver (Standard Webhooks,
https://www.standardwebhooks.com): the server started with
--webhook-secret-file signs every attempt with each of its secrets."""

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Iterable, Mapping, Optional, Union

from .types import Delivery

DEFAULT_TOLERANCE_SECONDS = 300


class WebhookVerificationError(Exception):
    """The delivery is not to be trusted. `reason` is "missing" (a
    webhook-* header), "timestamp" (stale, from the future, or not a
    number: a replay), or "signature" (no entry matches a secret)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def _key(secret: str) -> bytes:
    text = secret.strip()
    if text.startswith("whsec_"):
        text = text[len("whsec_"):]
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as e:
        raise ValueError("a webhook secret is whsec_ followed by base64") from e


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def verify_webhook(
    secret: Union[str, Iterable[str]],
    headers: Mapping[str, str],
    body: Union[bytes, str],
    *,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
    now: Optional[float] = None,
) -> Delivery:
    """Checks a delivery's webhook-id, webhook-timestamp and
    webhook-signature against `secret` (one "whsec_..." secret, or several
    while one is rotated: any may have signed), and returns its parsed
    body. Raises WebhookVerificationError if a header is missing, the
    timestamp is more than `tolerance_seconds` from `now` (default: the
    clock) either way, or no signature matches. Pass the body exactly as
    received (bytes): a re-serialized JSON body does not verify.

        delivery = verify_webhook(os.environ["TICKWHEEL_WEBHOOK_SECRET"],
                                  request.headers, request.body)
        handle(delivery["id"], delivery["payload"])
    """
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise ValueError("no webhook secret given")
    keys = [_key(s) for s in secrets]
    msg_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not msg_id or not timestamp or not signatures:
        raise WebhookVerificationError(
            "missing", "the delivery lacks webhook-id, webhook-timestamp or webhook-signature")
    if not timestamp.isdigit():
        raise WebhookVerificationError("timestamp", f"webhook-timestamp {timestamp!r} is not Unix seconds")
    clock = time.time() if now is None else now
    if abs(clock - int(timestamp)) > tolerance_seconds:
        raise WebhookVerificationError(
            "timestamp",
            f"webhook-timestamp {timestamp} is more than {tolerance_seconds} s from now ({int(clock)}): "
            "a replay, or a clock that is off")
    raw = body.encode() if isinstance(body, str) else bytes(body)
    signed = f"{msg_id}.{timestamp}.".encode() + raw
    expected = [base64.b64encode(hmac.new(k, signed, hashlib.sha256).digest()) for k in keys]
    for entry in signatures.split():
        version, _, value = entry.partition(",")
        if version != "v1":
            continue
        for e in expected:
            if hmac.compare_digest(e, value.encode()):
                return json.loads(raw)
    raise WebhookVerificationError("signature", "no webhook-signature entry matches the secret(s)")
