"""Signed, expiring download links of data exports (domain.accounts.export_links)."""

from __future__ import annotations

import uuid
from urllib.parse import parse_qs, urlsplit

from domain.accounts.export_links import ExportLinkSigner

NOW = 1_900_000_000.0


def parts(path: str) -> tuple[uuid.UUID, int, str]:
    url = urlsplit(path)
    query = parse_qs(url.query)
    return uuid.UUID(url.path.rsplit("/", 1)[1]), int(query["expires"][0]), query["signature"][0]


def test_a_link_works_for_its_archive_until_it_expires():
    signer = ExportLinkSigner("s" * 40)
    export_id = uuid.uuid4()
    got_id, expires, signature = parts(signer.path(export_id, ttl_s=900, now=NOW))
    assert got_id == export_id and expires == int(NOW) + 900
    assert signer.check(export_id, expires, signature, now=NOW) is None
    assert signer.check(export_id, expires, signature, now=NOW + 899) is None
    assert signer.check(export_id, expires, signature, now=NOW + 900) == "expired"


def test_a_link_cannot_be_moved_to_another_archive_time_or_key():
    signer = ExportLinkSigner("s" * 40)
    export_id = uuid.uuid4()
    _, expires, signature = parts(signer.path(export_id, ttl_s=900, now=NOW))
    assert signer.check(uuid.uuid4(), expires, signature, now=NOW) == "forged"
    assert signer.check(export_id, expires + 3600, signature, now=NOW) == "forged"
    assert ExportLinkSigner("t" * 40).check(export_id, expires, signature, now=NOW) == "forged"
    assert signer.check(export_id, expires, "", now=NOW) == "forged"
