"""Access tokens as JWTs with PyJWT (:class:`domain.identity.tokens.AccessTokenCodec`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jwt

from domain.identity.tokens import TokenExpiredError, TokenRejectedError

_ALGORITHM = "HS256"


@dataclass(frozen=True)
class JwtCodec:
    """HS256 JWTs: only that algorithm is accepted on verification."""

    def sign(self, claims: Mapping[str, Any], secret: str) -> str:
        return jwt.encode(dict(claims), secret, algorithm=_ALGORITHM)

    def verify(
        self, token: str, secret: str, *, issuer: str, required: Sequence[str]
    ) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                secret,
                algorithms=[_ALGORITHM],
                issuer=issuer,
                options={"require": list(required)},
            )
        except jwt.ExpiredSignatureError as exc:
            raise TokenExpiredError(str(exc)) from exc
        except jwt.PyJWTError as exc:
            raise TokenRejectedError(str(exc)) from exc
        return claims
