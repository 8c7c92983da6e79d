"""Access tokens (JWT HS256 with ``sid``, via :class:`AccessTokenCodec`) and opaque 256-bit refresh
tokens stored as SHA-256."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import secrets
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from domain.db import utcnow
from domain.identity.errors import InvalidTokenError

_ISSUER = "roost"
_REQUIRED = ("exp", "iat", "sub", "iss", "sid")


class TokenRejectedError(Exception):
    """The codec refused a token: malformed, forged, another issuer, or missing a claim."""


class TokenExpiredError(TokenRejectedError):
    """The codec found a token well signed but past its ``exp``."""


class AccessTokenCodec(Protocol):
    """Signs and verifies access tokens (JWTs signed with HMAC-SHA-256 under a secret)."""

    def sign(self, claims: Mapping[str, Any], secret: str) -> str:
        """The signed token of ``claims`` (datetimes as epoch seconds)."""
        ...

    def verify(
        self, token: str, secret: str, *, issuer: str, required: Sequence[str]
    ) -> dict[str, Any]:
        """The claims of a token by ``issuer`` under ``secret``, unexpired with every ``required``;
        raises TokenExpiredError or TokenRejectedError."""
        ...


@dataclass(frozen=True)
class TokenConfig:
    """Signing secret, codec and lifetimes; built from settings by the wiring layer."""

    secret: str
    codec: AccessTokenCodec = field(kw_only=True)
    access_ttl: dt.timedelta = dt.timedelta(minutes=15)
    refresh_ttl: dt.timedelta = dt.timedelta(days=30)
    # A rotated refresh token presented again within this gets the same successor.
    refresh_grace: dt.timedelta = dt.timedelta(seconds=10)


def issue_access_token(config: TokenConfig, user_id: uuid.UUID, session_id: uuid.UUID) -> str:
    """Return a signed JWT whose ``sub`` is the user id and ``sid`` the session id."""
    now = utcnow()
    claims = {
        "iss": _ISSUER,
        "sub": str(user_id),
        "sid": str(session_id),
        "iat": now,
        "exp": now + config.access_ttl,
        "typ": "access",
    }
    return config.codec.sign(claims, config.secret)


@dataclass(frozen=True, slots=True)
class AccessClaims:
    """A valid access token's user, session and expiry (epoch seconds)."""

    user_id: uuid.UUID
    session_id: uuid.UUID
    expires_at: float


def decode_access_token(config: TokenConfig, token: str) -> uuid.UUID:
    """Return the user id of a valid access token (see :func:`decode_access_claims`)."""
    return decode_access_claims(config, token).user_id


#: Valid access tokens remembered per process (LRU): verifying costs more than a small request.
VERIFIED_TOKENS_MAX = 4096
_verified: OrderedDict[tuple[str, str], AccessClaims] = OrderedDict()


def decode_access_claims(config: TokenConfig, token: str) -> AccessClaims:
    """The claims of a valid access token (cached by text until expiry, re-checked each call).
    Raises :class:`InvalidTokenError`."""
    key = (config.secret, token)
    claims = _verified.get(key)
    if claims is not None:
        if time.time() < claims.expires_at:
            _verified.move_to_end(key)
            return claims
        del _verified[key]
    claims = _verify_access_token(config, token)
    _verified[key] = claims
    while len(_verified) > VERIFIED_TOKENS_MAX:
        _verified.popitem(last=False)
    return claims


def _verify_access_token(config: TokenConfig, token: str) -> AccessClaims:
    try:
        claims = config.codec.verify(token, config.secret, issuer=_ISSUER, required=_REQUIRED)
    except TokenExpiredError as exc:
        raise InvalidTokenError("The access token has expired; refresh the session.") from exc
    except TokenRejectedError as exc:
        raise InvalidTokenError("The access token is invalid.") from exc
    if claims.get("typ") != "access":
        raise InvalidTokenError("The access token is invalid.")
    try:
        return AccessClaims(
            uuid.UUID(claims["sub"]), uuid.UUID(claims["sid"]), float(claims["exp"])
        )
    except (ValueError, TypeError, AttributeError) as exc:
        raise InvalidTokenError("The access token is invalid.") from exc


def new_refresh_token() -> tuple[str, bytes]:
    """Return ``(token, sha256(token))``: give the token to the client, store the digest."""
    token = secrets.token_urlsafe(32)
    return token, hash_refresh_token(token)


def successor_refresh_token(config: TokenConfig, token: str) -> tuple[str, bytes]:
    """The one successor of ``token`` and its digest: HMAC-SHA-256 under the secret, so
    deterministic."""
    mac = hmac.new(config.secret.encode(), b"roost-refresh:" + token.encode(), hashlib.sha256)
    successor = base64.urlsafe_b64encode(mac.digest()).decode().rstrip("=")
    return successor, hash_refresh_token(successor)


def hash_refresh_token(token: str) -> bytes:
    """Return the 32-byte SHA-256 digest under which a refresh token is stored."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
