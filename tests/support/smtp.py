"""A real SMTP server in the test process (aiosmtpd, in its own thread): the worker
sends to it over TCP and tests read what it received."""

from __future__ import annotations

import email
import email.policy
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage

from aiosmtpd.controller import Controller

from tests.support.polling import eventually
from tests.support.servers import free_port

#: The code in a Roost mail: the indented line of 43 URL-safe characters.
_CODE = re.compile(r"^ {4}([A-Za-z0-9_-]{43})\r?$", re.MULTILINE)


class Mailbox:
    """What the server received (parsed messages), and the replies it is told to give:
    :meth:`defer` makes the next ``n`` messages fail with 451 (try again later)."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self._lock = threading.Lock()
        self._defer = 0
        self.deferred = 0

    def defer(self, n: int) -> None:
        """Answer the next ``n`` messages 451."""
        with self._lock:
            self._defer = n

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options) -> str:
        """Refuse mailboxes named ``no-such-mailbox@…`` for good (550)."""
        if address.startswith("no-such-mailbox@"):
            return "550 5.1.1 No such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope) -> str:  # aiosmtpd's hook
        with self._lock:
            if self._defer > 0:
                self._defer -= 1
                self.deferred += 1
                return "451 4.3.0 Try again later"
            msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
            self.messages.append(msg)  # type: ignore[arg-type]
        return "250 OK"

    def to(self, address: str) -> list[EmailMessage]:
        """The messages received for ``address``, oldest first."""
        with self._lock:
            return [m for m in self.messages if m["To"] == address]

    async def wait_for(self, address: str, count: int = 1) -> list[EmailMessage]:
        """Wait until ``count`` messages for ``address`` arrived; return them all."""
        return await eventually(lambda: (got := self.to(address)) and len(got) >= count and got)


def code_in(message: EmailMessage) -> str:
    """The token a Roost mail carries."""
    body = message.get_body(("plain",))
    assert body is not None, message
    found = _CODE.findall(body.get_content())
    assert len(found) == 1, body.get_content()
    return found[0]


@contextmanager
def smtp_server(**options) -> Iterator[tuple[str, Mailbox]]:
    """Run an SMTP server on a free port of 127.0.0.1 (``options``: aiosmtpd's, e.g. an
    ``authenticator``); yield its SMTP_URL and mailbox."""
    box = Mailbox()
    port = free_port()
    controller = Controller(box, hostname="127.0.0.1", port=port, **options)
    controller.start()
    try:
        yield f"smtp://127.0.0.1:{port}", box
    finally:
        controller.stop()
