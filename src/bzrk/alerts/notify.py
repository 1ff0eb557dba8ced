"""Delivering notifications: webhook, Slack-compatible incoming webhook, SMTP e-mail.

The outbox (``alert_notifications``) is drained by :class:`Dispatcher`: each due row is
claimed, sent with a timeout, and marked delivered, retried with exponential backoff
(1 s, 2 s, 4 s, … at most 60 s) on a network error, a timeout, 408, 429 or 5xx, or failed for
good on another 4xx or after ``max_attempts``. Sends run concurrently up to ``concurrency``,
HTTP on the event loop (httpx), SMTP in a worker thread.

**Webhook.** ``POST`` of the JSON payload (``alert``, ``state``, ``value``, ``run_id``, …) with
``Content-Type: application/json``, ``X-Bzrk-Delivery: <notification id>`` (the same on every
retry: receivers de-duplicate by it), ``X-Bzrk-Event`` and, with a secret,
``X-Bzrk-Signature: sha256=<hex HMAC-SHA256 of the body with the secret>``.
**Slack.** ``POST {"text": …}`` to the incoming-webhook URL. **E-mail.** One message to every
``to`` address over SMTP (``none``, ``starttls`` or ``ssl``), optional login.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import smtplib
import ssl
import time
from email.message import EmailMessage
from typing import Any

import httpx

from bzrk import __version__
from bzrk.alerts.errors import AlertError
from bzrk.alerts.store import AlertStore, Delivery

log = logging.getLogger("bzrk.alerts.notify")

SIGNATURE_HEADER = "X-Bzrk-Signature"
DELIVERY_HEADER = "X-Bzrk-Delivery"
EVENT_HEADER = "X-Bzrk-Event"
USER_AGENT = f"bzrk-alerts/{__version__}"
MAX_BACKOFF_S = 60.0


class DeliveryError(Exception):
    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.message = message
        self.retry = retry


def body_bytes(payload: dict[str, Any]) -> bytes:
    """The exact bytes a webhook receives (and the signature covers)."""
    return json.dumps(payload, separators=(",", ":"), sort_keys=True, default=str).encode()


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def summary(payload: dict[str, Any]) -> tuple[str, str]:
    """``(subject, text)`` of a notification, for Slack and e-mail."""
    if "workflow" in payload:
        head = f"[bzrk] workflow {payload['workflow']} {payload.get('state', 'completed')}"
        lines = [head]
        for step in payload.get("steps", []):
            lines.append(
                f"- {step['name']}: {step['status']}"
                + (
                    f" (first row {json.dumps(step.get('first_row'), default=str)})"
                    if step.get("first_row")
                    else ""
                )
            )
        return head, "\n".join(lines)
    state = str(payload.get("state", "")).upper()
    test = " (test)" if payload.get("test") else ""
    head = f"[bzrk] {state}{test}: {payload.get('alert')}"
    lines = [
        head,
        f"value: {payload.get('value')} (condition {payload.get('condition')})",
        f"database: {payload.get('database')}, window: since {payload.get('since')}",
        f"severity: {payload.get('severity')}, run: {payload.get('run_id')}",
    ]
    if payload.get("url"):
        lines.append(payload["url"])
    return head, "\n".join(lines)


def _http_status_error(status: int, text: str) -> DeliveryError:
    retry = status in (408, 429) or status >= 500
    return DeliveryError(f"HTTP {status}: {text[:200]}", retry=retry)


async def _post(
    client: httpx.AsyncClient, url: str, body: bytes, headers: dict[str, str], timeout: float
) -> None:
    try:
        response = await client.post(url, content=body, headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        raise DeliveryError(f"no answer within {timeout:g} s", retry=True) from None
    except httpx.HTTPError as exc:
        raise DeliveryError(
            f"cannot reach the receiver: {type(exc).__name__}", retry=True
        ) from None
    if not 200 <= response.status_code < 300:
        raise _http_status_error(response.status_code, response.text)


def _send_email(
    config: dict[str, Any], password: str | None, subject: str, text: str, timeout: float
) -> None:
    message = EmailMessage()
    message["Subject"] = subject
    message["From"] = config["from"]
    message["To"] = ", ".join(config["to"])
    message["User-Agent"] = USER_AGENT
    message.set_content(text)
    host, port = config["smtp_host"], int(config.get("smtp_port") or 25)
    security = config.get("security", "none")
    try:
        if security == "ssl":
            smtp: smtplib.SMTP = smtplib.SMTP_SSL(
                host, port, timeout=timeout, context=ssl.create_default_context()
            )
        else:
            smtp = smtplib.SMTP(host, port, timeout=timeout)
        with smtp:
            if security == "starttls":
                smtp.starttls(context=ssl.create_default_context())
            if config.get("username"):
                smtp.login(config["username"], password or "")
            smtp.send_message(message)
    except smtplib.SMTPResponseException as exc:
        raise DeliveryError(
            f"SMTP {exc.smtp_code}: {exc.smtp_error!r}"[:300],
            retry=exc.smtp_code >= 400 and exc.smtp_code < 500,
        ) from None
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(f"SMTP failed: {type(exc).__name__}: {exc}"[:300], retry=True) from None


class Dispatcher:
    """Sends what the outbox holds; one per scheduler (the leader drains it)."""

    def __init__(
        self,
        store: AlertStore,
        *,
        timeout_s: float = 5.0,
        max_attempts: int = 6,
        concurrency: int = 4,
    ) -> None:
        self.store = store
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.concurrency = concurrency
        self.client = httpx.AsyncClient(headers={"user-agent": USER_AGENT}, follow_redirects=False)
        self._slots = asyncio.Semaphore(concurrency)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def send(
        self, connection: dict[str, Any], secret: str | None, kind: str, payload: dict[str, Any]
    ) -> None:
        """One send to ``connection``; :class:`DeliveryError` when it did not arrive."""
        timeout = float(connection["config"].get("timeout_s") or self.timeout_s)
        kind_of = connection["type"]
        if kind_of == "webhook":
            body = body_bytes(payload)
            headers = {
                "content-type": "application/json",
                DELIVERY_HEADER: str(payload.get("notification_id", "")),
                EVENT_HEADER: kind,
                **connection["config"].get("headers", {}),
            }
            if secret:
                headers[SIGNATURE_HEADER] = signature(secret, body)
            await _post(self.client, connection["config"]["url"], body, headers, timeout)
        elif kind_of == "slack":
            _, text = summary(payload)
            if not secret:
                raise DeliveryError("the Slack connection has no URL", retry=False)
            await _post(
                self.client,
                secret,
                json.dumps({"text": text}).encode(),
                {"content-type": "application/json"},
                timeout,
            )
        else:
            subject, text = summary(payload)
            text += "\n\n" + json.dumps(payload, indent=2, sort_keys=True, default=str)
            await asyncio.to_thread(
                _send_email, connection["config"], secret, subject, text, timeout
            )

    async def drain(self, now: float | None = None) -> int:
        """Deliver every due notification once (claimed first); the number attempted."""
        hold = self.timeout_s * 2 + 5
        claimed = await asyncio.to_thread(
            self.store.claim_deliveries, now or time.time(), self.concurrency * 4, hold
        )
        if claimed:
            await asyncio.gather(*(self._deliver(d) for d in claimed))
        return len(claimed)

    async def _deliver(self, delivery: Delivery) -> None:
        async with self._slots:
            try:
                connection = await asyncio.to_thread(
                    self.store.get_connection, delivery.connection_id
                )
                secret = await asyncio.to_thread(self.store.connection_secret, connection)
                await self.send(connection, secret, delivery.kind, delivery.payload)
            except AlertError as exc:  # connection gone, secret unreadable: no retry helps
                await asyncio.to_thread(
                    self.store.delivery_failed, delivery.id, f"{exc.code}: {exc.message}", None
                )
                return
            except DeliveryError as exc:
                retry_at = None
                if exc.retry and delivery.attempts < self.max_attempts:
                    retry_at = time.time() + min(MAX_BACKOFF_S, 2.0 ** (delivery.attempts - 1))
                log.info(
                    "notification %s attempt %d failed: %s",
                    delivery.id,
                    delivery.attempts,
                    exc.message,
                )
                await asyncio.to_thread(
                    self.store.delivery_failed, delivery.id, exc.message, retry_at
                )
                return
            await asyncio.to_thread(self.store.delivered, delivery.id)
