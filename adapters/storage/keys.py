"""Object keys and content types of both stores: ``raw/<upload id>``,
``media/<post id>/<upload id>/<variant>.<ext>``; others are refused before any I/O."""

from __future__ import annotations

import re

#: Longest key accepted, in characters.
MAX_KEY_LENGTH = 512
#: Prefix of quarantine keys and of delivery keys.
RAW_PREFIX = "raw/"
DELIVERY_PREFIX = "media/"

# No segment starts with '.' (no '..', no hidden files); at most 8 segments.
_KEY = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}(?:/[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}){0,7}")

#: ``type/subtype`` as a stored content type must be (lower case, no parameters).
_CONTENT_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}")


class InvalidKeyError(ValueError):
    """A key outside the grammar of this module (or of the wrong area)."""


def _check(key: str, prefix: str) -> str:
    if (
        len(key) > MAX_KEY_LENGTH
        or not key.startswith(prefix)
        or len(key) == len(prefix)
        or _KEY.fullmatch(key) is None
    ):
        raise InvalidKeyError(f"not a valid {prefix!r} object key: {str(key)[:80]!r}")
    return key


def raw_key(key: str) -> str:
    """``key`` if it is a quarantine key (``raw/…``); else InvalidKeyError."""
    return _check(key, RAW_PREFIX)


def delivery_key(key: str) -> str:
    """``key`` if it is a delivery key (``media/…``); else InvalidKeyError."""
    return _check(key, DELIVERY_PREFIX)


def normalized_content_type(value: str) -> str | None:
    """``value`` lower-cased and trimmed, or None if not a bare ``type/subtype``."""
    v = value.strip().lower()
    return v if _CONTENT_TYPE.fullmatch(v) else None
