"""Single-use e-mail tokens: ``base64url(HMAC-SHA256(key, purpose:id))`` of the row's id, so a
retried mail sends the same token; the row keeps its SHA-256."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.identity.errors import InvalidTokenError

VERIFY_EMAIL = "verify_email"
RESET_PASSWORD = "reset_password"
#: Longer input is no token of ours (43 characters): refused before any query.
TOKEN_MAX_CHARS = 128


def derive_token(key: bytes, purpose: str, token_id: uuid.UUID) -> str:
    """The token of row ``token_id``: 43 URL-safe characters."""
    mac = hmac.new(key, purpose.encode() + b":" + token_id.bytes, "sha256").digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def token_hash(token: str) -> bytes:
    """What the row stores of ``token``: its SHA-256."""
    return hashlib.sha256(token.encode()).digest()


_EXISTING = text("SELECT used_at FROM email_tokens WHERE id = :id")
_RECENT = text(
    "SELECT count(*) FROM email_tokens WHERE user_id = :u AND purpose = :p"
    " AND created_at > now() - interval '1 hour'"
)
_INSERT = text(
    "INSERT INTO email_tokens (id, user_id, purpose, email, token_hash, expires_at)"
    " VALUES (:id, :u, :p, :email, :hash, now() + make_interval(secs => :ttl))"
)


async def issue_token(
    conn: AsyncConnection,
    key: bytes,
    *,
    token_id: uuid.UUID,
    user_id: uuid.UUID,
    purpose: str,
    email: str,
    ttl: dt.timedelta,
    per_hour: int,
) -> str | None:
    """The token to mail for ``token_id`` (the same for a retried job), its row written under the
    user's row lock; None when used or over the hour's ``per_hour`` budget."""
    existing = (await conn.execute(_EXISTING, {"id": token_id})).first()
    if existing is not None:
        return None if existing.used_at is not None else derive_token(key, purpose, token_id)
    if await conn.scalar(_RECENT, {"u": user_id, "p": purpose}) >= per_hour:
        return None
    token = derive_token(key, purpose, token_id)
    await conn.execute(
        _INSERT,
        {
            "id": token_id,
            "u": user_id,
            "p": purpose,
            "email": email,
            "hash": token_hash(token),
            "ttl": ttl.total_seconds(),
        },
    )
    return token


@dataclass(frozen=True)
class RedeemedToken:
    """A token just used: its row's id, account and the address it was mailed to."""

    id: uuid.UUID
    user_id: uuid.UUID
    email: str


_FIND = text(
    "SELECT id, user_id, email, used_at, expires_at <= now() AS expired FROM email_tokens"
    " WHERE token_hash = :hash AND purpose = :p FOR UPDATE"
)
_USE = text("UPDATE email_tokens SET used_at = now() WHERE id = :id")


async def redeem_token(conn: AsyncConnection, token: str, purpose: str) -> RedeemedToken:
    """Mark ``token`` of ``purpose`` used in the caller's transaction; raises InvalidTokenError when
    malformed, unknown, expired or used."""
    if not token or len(token) > TOKEN_MAX_CHARS or not token.isascii():
        raise InvalidTokenError("That token is not one of ours.")
    row = (await conn.execute(_FIND, {"hash": token_hash(token), "p": purpose})).first()
    if row is None:
        raise InvalidTokenError("That token is not one of ours.")
    if row.used_at is not None:
        raise InvalidTokenError("That token was used already; ask for a new one.")
    if row.expired:
        raise InvalidTokenError("That token has expired; ask for a new one.")
    await conn.execute(_USE, {"id": row.id})
    return RedeemedToken(row.id, row.user_id, row.email)
