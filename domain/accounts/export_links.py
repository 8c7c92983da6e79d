"""Signed export links ``/exports/<id>?expires=<unix s>&signature=<hex>``: HMAC-SHA256 of
``"<id>.<expires>"`` under a key derived from the secret (docs/api/account-lifecycle.md "Account
lifecycle")."""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from dataclasses import dataclass

_CONTEXT = b"roost:data-export-link:v1"


@dataclass(frozen=True)
class ExportLinkSigner:
    """Signs and checks export links with a key derived from ``secret``."""

    secret: str

    @property
    def _key(self) -> bytes:
        return hmac.new(self.secret.encode(), _CONTEXT, hashlib.sha256).digest()

    def signature(self, export_id: uuid.UUID, expires: int) -> str:
        """The hex HMAC-SHA256 of (export id, expiry)."""
        message = f"{export_id}.{expires}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def path(self, export_id: uuid.UUID, *, ttl_s: float, now: float | None = None) -> str:
        """The link's path and query, valid ``ttl_s`` seconds from ``now`` (epoch s)."""
        expires = int((time.time() if now is None else now) + ttl_s)
        return (
            f"/exports/{export_id}?expires={expires}&signature={self.signature(export_id, expires)}"
        )

    def check(
        self, export_id: uuid.UUID, expires: int, signature: str, *, now: float | None = None
    ) -> str | None:
        """None if genuine and unexpired, else ``forged`` or ``expired`` (constant time)."""
        if not hmac.compare_digest(self.signature(export_id, expires), signature):
            return "forged"
        if (time.time() if now is None else now) >= expires:
            return "expired"
        return None
