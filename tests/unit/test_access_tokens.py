"""Access-token verification is remembered per process (domain.identity.tokens), and a
remembered token is still refused once expired, and never stands in for another."""

from __future__ import annotations

import datetime as dt
import uuid

import jwt
import pytest

from adapters.jwt_codec import JwtCodec
from domain.identity import tokens
from domain.identity.errors import InvalidTokenError
from domain.identity.tokens import TokenConfig, decode_access_claims, issue_access_token

CONFIG = TokenConfig(codec=JwtCodec(), secret="unit-test-secret-" + "x" * 32)


def test_a_verified_token_is_remembered_and_gives_the_same_claims(monkeypatch):
    user, session = uuid.uuid4(), uuid.uuid4()
    token = issue_access_token(CONFIG, user, session)
    first = decode_access_claims(CONFIG, token)
    calls = []
    monkeypatch.setattr(tokens, "_verify_access_token", lambda *a: calls.append(a))
    again = decode_access_claims(CONFIG, token)
    assert again == first and (again.user_id, again.session_id) == (user, session)
    assert calls == []  # not verified a second time


def test_a_remembered_token_is_verified_again_once_expired(monkeypatch):
    token = issue_access_token(CONFIG, uuid.uuid4(), uuid.uuid4())
    claims = decode_access_claims(CONFIG, token)
    monkeypatch.setattr(tokens.time, "time", lambda: claims.expires_at)  # its expiry second

    def verify(config, text):
        raise InvalidTokenError("The access token has expired; refresh the session.")

    monkeypatch.setattr(tokens, "_verify_access_token", verify)
    with pytest.raises(InvalidTokenError, match="expired"):
        decode_access_claims(CONFIG, token)
    assert (CONFIG.secret, token) not in tokens._verified


def test_another_secret_or_an_altered_token_is_verified_in_full():
    token = issue_access_token(CONFIG, uuid.uuid4(), uuid.uuid4())
    decode_access_claims(CONFIG, token)
    other = TokenConfig(codec=JwtCodec(), secret="another-secret-" + "y" * 32)
    with pytest.raises(InvalidTokenError):
        decode_access_claims(other, token)
    header, payload, signature = token.split(".")
    forged_claims = jwt.decode(token, options={"verify_signature": False})
    forged_claims["sub"] = str(uuid.uuid4())
    forged = jwt.encode(forged_claims, "not-the-secret-" + "z" * 32, algorithm="HS256")
    with pytest.raises(InvalidTokenError):
        decode_access_claims(CONFIG, forged)
    with pytest.raises(InvalidTokenError):
        decode_access_claims(CONFIG, f"{header}.{payload}.{signature[:-2]}AA")


def test_the_memory_is_bounded(monkeypatch):
    monkeypatch.setattr(tokens, "VERIFIED_TOKENS_MAX", 3)
    for _ in range(10):
        decode_access_claims(CONFIG, issue_access_token(CONFIG, uuid.uuid4(), uuid.uuid4()))
    assert len(tokens._verified) <= 3


def test_an_expired_token_is_never_remembered():
    expired = TokenConfig(
        codec=JwtCodec(), secret=CONFIG.secret, access_ttl=dt.timedelta(seconds=-5)
    )
    token = issue_access_token(expired, uuid.uuid4(), uuid.uuid4())
    for _ in range(2):
        with pytest.raises(InvalidTokenError, match="expired"):
            decode_access_claims(CONFIG, token)
