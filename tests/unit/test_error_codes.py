"""``Error.code`` is the ``ErrorCode`` enum, and every code a typed error can carry is one
of its values, spelled as on the wire before (``NOT_FOUND``, ...)."""

from __future__ import annotations

from app.print_schema import SCHEMA_FILE
from schema.errors import _MAP, ErrorCode, error_from_domain


def _subclasses(cls: type) -> list[type]:
    return [cls, *(s for sub in cls.__subclasses__() for s in _subclasses(sub))]


def test_every_typed_error_code_is_an_error_code_value():
    codes = {s.code for domain_cls, _ in _MAP for s in _subclasses(domain_cls)}
    assert codes <= {c.value for c in ErrorCode}, codes - {c.value for c in ErrorCode}
    assert {c.name for c in ErrorCode} == {c.value for c in ErrorCode}  # wire = name


def test_the_sdl_types_the_code_as_the_enum():
    sdl = SCHEMA_FILE.read_text(encoding="utf-8")
    assert "enum ErrorCode {" in sdl
    assert "code: String!" not in sdl


def test_a_domain_error_becomes_its_typed_error_with_the_enum_code():
    from domain.errors import NotFoundError

    out = error_from_domain(NotFoundError("No such post."))
    assert out.code is ErrorCode.NOT_FOUND and out.code.value == "NOT_FOUND"
