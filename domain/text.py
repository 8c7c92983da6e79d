"""Normalisation and limits of user text (docs/design.md "Decided details"): code points after NFC;
NUL or over-limit raises :class:`~domain.errors.ValidationError`. Only display names refuse
UAX #9 bidirectional controls."""

from __future__ import annotations

import re
import unicodedata

from domain.errors import ValidationError

USERNAME_RE = re.compile(r"^[a-z0-9._]{3,30}$")
DISPLAY_NAME_MAX = 50
BIO_MAX = 150
CAPTION_MAX = 2200
COMMENT_MAX = 2200
EMAIL_MAX = 254
PASSWORD_MIN = 8
PASSWORD_MAX = 256
#: UAX #9 explicit directional formatting characters and marks.
BIDI_CONTROLS = frozenset(
    "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_EMAIL_RE = re.compile(r"^[^@\s\x00]+@[^@\s\x00]+\.[^@\s\x00]+$")


def clean_text(field: str, value: str, *, max_len: int, min_len: int = 0) -> str:
    """``value`` NFC-normalised; ValidationError on NUL or a length outside ``[min_len,
    max_len]`` code points after NFC."""
    if "\x00" in value:
        raise ValidationError(field, f"{field} must not contain a NUL character.")
    value = unicodedata.normalize("NFC", value)
    n = len(value)
    if n > max_len:
        raise ValidationError(
            field, f"{field} is {n} code points; the limit is {max_len} (Unicode code points)."
        )
    if n < min_len:
        raise ValidationError(field, f"{field} must be at least {min_len} code points.")
    return value


def normalize_username(value: str, field: str = "username") -> str:
    """The canonical username, ``^[a-z0-9._]{3,30}$`` after lower-casing (look-alikes
    are refused, not folded); raises ValidationError."""
    if "\x00" in value:
        raise ValidationError(field, f"{field} must not contain a NUL character.")
    canonical = value.lower() if value.isascii() else value
    if not USERNAME_RE.fullmatch(canonical):
        raise ValidationError(
            field,
            "Usernames are 3–30 characters: ASCII letters, digits, '.' and '_' only.",
        )
    return canonical


#: The prefix of purged accounts' usernames (domain.accounts.purge): nobody may choose it.
TOMBSTONE_PREFIX = "deleted."


def new_username(value: str, field: str = "username") -> str:
    """:func:`normalize_username`, also refusing the ``deleted.`` prefix."""
    canonical = normalize_username(value, field)
    if canonical.startswith(TOMBSTONE_PREFIX):
        raise ValidationError(
            field,
            f"Usernames starting with {TOMBSTONE_PREFIX!r} are reserved for deleted accounts.",
        )
    return canonical


def clean_display_name(value: str) -> str:
    """The NFC display name (1–50, no NUL, no bidirectional control)."""
    value = clean_text("displayName", value.strip(), max_len=DISPLAY_NAME_MAX, min_len=1)
    if not BIDI_CONTROLS.isdisjoint(value):
        raise ValidationError(
            "displayName",
            "displayName must not contain bidirectional control characters (U+200E, U+200F,"
            " U+061C, U+202A–U+202E, U+2066–U+2069).",
        )
    return value


def clean_bio(value: str) -> str:
    """Return the NFC bio (0–150 code points, no NUL)."""
    return clean_text("bio", value, max_len=BIO_MAX)


def clean_email(value: str) -> str:
    """Return the lower-cased e-mail address or raise ValidationError on an obviously bad one."""
    value = clean_text("email", value.strip(), max_len=EMAIL_MAX, min_len=3).lower()
    if not _EMAIL_RE.fullmatch(value):
        raise ValidationError("email", "That does not look like an e-mail address.")
    return value


def check_password(value: str) -> str:
    """Return the password unchanged if it is 8–256 code points with no NUL."""
    return clean_text("password", value, max_len=PASSWORD_MAX, min_len=PASSWORD_MIN)
