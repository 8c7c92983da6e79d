"""Test users: inserted in one statement, each with a live session and an access token."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.settings import Settings
from domain.db import new_id
from domain.identity.passwords import hash_password_sync
from domain.identity.tokens import issue_access_token
from schema.ids import to_global_id

TEST_PASSWORD = "correct horse battery staple"


@dataclass(frozen=True)
class TestUser:
    id: uuid.UUID
    username: str
    token: str
    session_id: uuid.UUID | None = None  # the session (refresh-token family) of ``token``

    @property
    def gid(self) -> str:
        return to_global_id("User", self.id)


_PASSWORD_HASH: str | None = None


def user_maker(engine: AsyncEngine, settings: Settings):
    """What the ``make_users`` fixture returns, for fixtures of a wider scope."""

    async def _make(n: int, prefix: str = "u", *, active: bool = True) -> list[TestUser]:
        global _PASSWORD_HASH
        _PASSWORD_HASH = _PASSWORD_HASH or hash_password_sync(TEST_PASSWORD)
        rows = []
        for _ in range(n):
            uid = new_id()
            rows.append(
                {
                    "id": uid,
                    "username": f"{prefix}{uid.hex[-16:]}",
                    "hash": _PASSWORD_HASH,
                    "active": active,
                }
            )
        for r in rows:
            r["sid"] = new_id()
            r["digest"] = os.urandom(32)
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO users (id, username, display_name, password_hash, last_active_at)"
                    " VALUES (:id, :username, :username, :hash,"
                    " CASE WHEN :active THEN now() END)"
                ),
                rows,
            )
            # A live session for each token (its refresh token is not handed out).
            await conn.execute(
                text(
                    "INSERT INTO sessions (id, user_id, token_hash, family_id, expires_at)"
                    " VALUES (:sid, :id, :digest, :sid, now() + interval '30 days')"
                ),
                rows,
            )
        cfg = settings.token_config
        return [
            TestUser(r["id"], r["username"], issue_access_token(cfg, r["id"], r["sid"]), r["sid"])
            for r in rows
        ]

    return _make
