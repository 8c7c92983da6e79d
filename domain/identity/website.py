"""A profile's website link: what ``User.website`` may hold."""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from urllib.parse import urlsplit, urlunsplit

from domain.errors import ValidationError

WEBSITE_MAX = 200

# DNS labels (IDNA xn-- included) with at least one dot: no "localhost".
_HOST = re.compile(r"(?=.{4,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}")


def clean_website(value: str) -> str | None:
    """``value`` as stored: an absolute http(s) URL (≤ 200 chars) on a public host, scheme and host
    lower-cased; blank clears (None). Raises ValidationError("website") otherwise (credentials,
    IPs, localhost, control characters, non-``xn--`` hosts, bad ports)."""
    url = value.strip()
    if not url:
        return None
    if len(url) > WEBSITE_MAX:
        raise ValidationError(
            "website", f"website is {len(url)} characters; the limit is {WEBSITE_MAX}."
        )
    if any(unicodedata.category(ch)[0] in "CZ" for ch in url):
        raise ValidationError(
            "website", "A website link has no spaces, control or formatting characters."
        )
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValidationError("website", "That is not a valid link.") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValidationError("website", "A website link starts with https:// or http://.")
    host = (parts.hostname or "").rstrip(".")
    if parts.username is not None or parts.password is not None:
        raise ValidationError("website", "A website link carries no user name or password.")
    if not host or not _HOST.fullmatch(host) or _is_ip(host):
        raise ValidationError("website", "A website link names a public host (example.com).")
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme.lower(), netloc, parts.path, parts.query, parts.fragment))


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
