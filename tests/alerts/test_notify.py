"""Deliveries from the outbox: signed webhooks, retries with backoff, Slack, SMTP e-mail."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import socket
import time
from collections.abc import Iterator
from email import message_from_bytes
from typing import Any

import pytest
import sqlalchemy as sa
from aiosmtpd.controller import Controller

from bzrk.alerts import tables
from bzrk.alerts.secrets import KEY_FILE
from bzrk.alerts.service import AlertService
from tests.alerts.helpers import Receiver

PAYLOAD = {"alert": "errors", "state": "firing", "value": 7, "run_id": "r-1", "condition": "n >= 3"}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


def deliver(service: AlertService, connection: dict[str, Any], at: float | None = None) -> str:
    ident = service.store.queue(connection["id"], "firing", PAYLOAD)
    asyncio.run(service.dispatcher.drain(at))
    return ident


def test_a_webhook_gets_the_signed_body_and_its_delivery_id(service: AlertService, owner: Any, receiver: Receiver) -> None:  # fmt: skip
    hook = service.create_connection(
        owner, {"name": "h", "type": "webhook", "url": receiver.url, "secret": "top", "headers": {"X-Team": "sre"}}
    )  # fmt: skip
    ident = deliver(service, hook)
    (got,) = receiver.received
    expected = "sha256=" + hmac.new(b"top", got.body, hashlib.sha256).hexdigest()
    assert got.headers["x-bzrk-signature"] == expected
    assert got.headers["x-bzrk-delivery"] == ident and got.headers["x-team"] == "sre"
    assert got.headers["content-type"] == "application/json"
    assert got.json == {**PAYLOAD, "notification_id": ident}
    assert service.store.get_notification(ident)["status"] == "delivered"
    plain = service.create_connection(owner, {"name": "p", "type": "webhook", "url": receiver.url})
    deliver(service, plain)
    assert "x-bzrk-signature" not in receiver.received[-1].headers


def test_retries_back_off_and_stop_on_a_refusal(service: AlertService, owner: Any, receiver: Receiver) -> None:  # fmt: skip
    hook = service.create_connection(owner, {"name": "h", "type": "webhook", "url": receiver.url})
    receiver.fail_first = 2
    ident = deliver(service, hook)
    row = service.store.get_notification(ident)
    assert row["status"] == "pending" and row["attempts"] == 1 and "HTTP 500" in row["last_error"]
    assert row["next_attempt_at"] > time.time()  # not before its backoff
    asyncio.run(service.dispatcher.drain())
    assert service.store.get_notification(ident)["attempts"] == 1  # not due yet
    for _ in range(2):
        asyncio.run(service.dispatcher.drain(time.time() + 120))
    row = service.store.get_notification(ident)
    assert (row["status"], row["attempts"]) == ("delivered", 3)
    assert [r.status for r in receiver.received] == [500, 500, 200]
    assert len({r.headers["x-bzrk-delivery"] for r in receiver.received}) == 1

    receiver.fail_first, receiver.fail_status = 1, 404
    refused = deliver(service, hook)
    row = service.store.get_notification(refused)
    assert (row["status"], row["attempts"]) == ("failed", 1) and "HTTP 404" in row["last_error"]


def test_an_unreachable_receiver_is_retried_until_max_attempts(service: AlertService, owner: Any) -> None:  # fmt: skip
    hook = service.create_connection(owner, {"name": "h", "type": "webhook", "url": "http://127.0.0.1:9/x", "timeout_s": 1})  # fmt: skip
    ident = deliver(service, hook)
    for _ in range(service.dispatcher.max_attempts):
        asyncio.run(service.dispatcher.drain(time.time() + 3600))
    row = service.store.get_notification(ident)
    assert row["status"] == "failed" and row["attempts"] == service.dispatcher.max_attempts
    assert "cannot reach" in row["last_error"]


def test_slack_gets_a_text_message(service: AlertService, owner: Any, receiver: Receiver) -> None:
    slack = service.create_connection(owner, {"name": "s", "type": "slack", "url": receiver.url})
    assert slack["url"] == "(hidden)" and receiver.url not in str(slack)
    deliver(service, slack)
    text = receiver.received[0].json["text"]
    assert text.startswith("[bzrk] FIRING: errors") and "value: 7 (condition n >= 3)" in text


class Inbox:
    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append((envelope.rcpt_tos, message_from_bytes(envelope.content)))
        return "250 OK"


def test_email_goes_over_smtp(service: AlertService, owner: Any) -> None:
    inbox = Inbox()
    with socket.socket() as probe:  # aiosmtpd needs a real port number to start on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = Controller(inbox, hostname="127.0.0.1", port=port)
    server.start()
    try:
        mail = service.create_connection(
            owner,
            {"name": "m", "type": "email", "to": ["oncall@example.com", "sre@example.com"],
             "from": "bzrk@example.com", "smtp_host": "127.0.0.1", "smtp_port": port},
        )  # fmt: skip
        assert mail["security"] == "none" and mail["to"] == [
            "oncall@example.com",
            "sre@example.com",
        ]
        ident = deliver(service, mail)
        assert service.store.get_notification(ident)["status"] == "delivered"
    finally:
        server.stop()
    ((to, message),) = inbox.messages
    assert to == ["oncall@example.com", "sre@example.com"]
    assert message["Subject"] == "[bzrk] FIRING: errors" and message["From"] == "bzrk@example.com"
    assert '"run_id": "r-1"' in message.get_payload()


def test_secrets_are_sealed_at_rest_and_never_shown(service: AlertService, owner: Any, ctx: Any) -> None:  # fmt: skip
    made = service.create_connection(owner, {"name": "h", "type": "webhook", "url": "http://x.example/h", "secret": "hunter2"})  # fmt: skip
    assert "hunter2" not in str(made) and made["has_secret"] is True
    assert "hunter2" not in str(service.list_connections(owner))
    with ctx.meta.engine.connect() as conn:
        raw = conn.execute(sa.select(tables.connections.c.secret)).scalar()
    assert raw and "hunter2" not in raw
    assert service.store.connection_secret(service.store.get_connection("h")) == "hunter2"
    assert (ctx.settings.data_dir / KEY_FILE).stat().st_mode & 0o777 == 0o600
    cleared = service.update_connection(owner, "h", {"secret": None})
    assert cleared["has_secret"] is False
