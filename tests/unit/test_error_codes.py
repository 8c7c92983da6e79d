"""``Error.code`` is the ``ErrorCode`` enum: one value per declared error type, its domain
class's ``code``, spelled as on the wire before (``NOT_FOUND``, ...)."""

from __future__ import annotations

from app.print_schema import SCHEMA_FILE
from schema.errors import _TYPES, ErrorCode, error_from_domain


def _subclasses(cls: type) -> list[type]:
    return [cls, *(s for sub in cls.__subclasses__() for s in _subclasses(sub))]


def test_each_declared_error_type_has_its_domain_class_code() -> None:
    assert [c.value for c in ErrorCode] == [domain_cls.code for domain_cls in _TYPES]
    assert [c.name for c in ErrorCode] == [c.value for c in ErrorCode]  # wire = name


def test_subclasses_of_a_declared_class_keep_its_code() -> None:
    """An instance is answered with its declared class's code: a subclass with a code of
    its own needs an error type of its own."""
    wrong = [
        (s.__name__, s.code)
        for domain_cls in _TYPES
        for s in _subclasses(domain_cls)
        if s.code != domain_cls.code and s not in _TYPES
    ]
    assert not wrong, wrong


def test_the_sdl_types_the_code_as_the_enum():
    sdl = SCHEMA_FILE.read_text(encoding="utf-8")
    assert "enum ErrorCode {" in sdl
    assert "code: String!" not in sdl


def test_a_domain_error_becomes_its_typed_error_with_the_enum_code():
    from domain.errors import NotFoundError

    out = error_from_domain(NotFoundError("No such post."))
    assert out.code is ErrorCode.NOT_FOUND and out.code.value == "NOT_FOUND"
