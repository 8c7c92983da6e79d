"""Access tokens (JWT, HS256) and opaque refresh tokens.

Access tokens live ``access_ttl`` (15 min by default) and are checked without a
database read; refresh tokens are 256-bit random strings whose SHA-256 is stored
in ``sessions`` so they can be revoked (30 days by default).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
import uuid
from dataclasses import dataclass

import jwt

from domain.db import utcnow
from domain.identity.errors import InvalidTokenError

_ALGORITHM = "HS256"
_ISSUER = "roost"


@dataclass(frozen=True)
class TokenConfig:
    """Signing secret and lifetimes; built from settings by the wiring layer."""

    secret: str
    access_ttl: dt.timedelta = dt.timedelta(minutes=15)
    refresh_ttl: dt.timedelta = dt.timedelta(days=30)


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
    return jwt.encode(claims, config.secret, algorithm=_ALGORITHM)


def decode_access_token(config: TokenConfig, token: str) -> uuid.UUID:
    """Return the user id of a valid access token.

    Raises :class:`InvalidTokenError` if the token is malformed, forged (bad
    signature or algorithm), expired, or not an access token.
    """
    try:
        claims = jwt.decode(
            token,
            config.secret,
            algorithms=[_ALGORITHM],
            issuer=_ISSUER,
            options={"require": ["exp", "iat", "sub", "iss"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise InvalidTokenError("The access token has expired; refresh the session.") from exc
    except jwt.PyJWTError as exc:
        raise InvalidTokenError("The access token is invalid.") from exc
    if claims.get("typ") != "access":
        raise InvalidTokenError("The access token is invalid.")
    try:
        return uuid.UUID(claims["sub"])
    except (ValueError, TypeError) as exc:
        raise InvalidTokenError("The access token is invalid.") from exc


def new_refresh_token() -> tuple[str, bytes]:
    """Return ``(token, sha256(token))``: give the token to the client, store the digest."""
    token = secrets.token_urlsafe(32)
    return token, hash_refresh_token(token)


def hash_refresh_token(token: str) -> bytes:
    """Return the 32-byte SHA-256 digest under which a refresh token is stored."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
