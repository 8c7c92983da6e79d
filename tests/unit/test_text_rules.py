"""domain/text.py: NFC code-point limits, NUL, and the username rule (docs/design.md "Decided
details"). Pure logic, no database."""

from __future__ import annotations

import pytest

from domain.errors import ValidationError
from domain.identity.website import clean_website
from domain.text import (
    BIO_MAX,
    check_password,
    clean_bio,
    clean_display_name,
    clean_email,
    clean_text,
    normalize_username,
)


def refused(fn, value, field: str) -> ValidationError:
    """Call ``fn(value)``, assert it raises ValidationError naming ``field``, return it."""
    with pytest.raises(ValidationError) as info:
        fn(value)
    assert info.value.field == field, (value, info.value.field)
    assert info.value.code == "VALIDATION_FAILED"
    assert info.value.message
    return info.value


# --- clean_text -------------------------------------------------------------------------


def test_clean_text_counts_code_points_after_nfc():
    decomposed = "e\u0301" * 10  # 20 code points, 10 after NFC
    assert clean_text("f", decomposed, max_len=10) == "é" * 10
    refused(lambda v: clean_text("f", v, max_len=9), decomposed, "f")


def test_clean_text_limits_are_inclusive():
    assert clean_text("f", "x" * 5, max_len=5, min_len=5) == "xxxxx"
    refused(lambda v: clean_text("f", v, max_len=5), "x" * 6, "f")
    refused(lambda v: clean_text("f", v, max_len=5, min_len=2), "x", "f")


def test_clean_text_counts_astral_characters_once():
    # One code point each, even though UTF-16 would need two units and UTF-8 four bytes.
    assert clean_text("f", "😀" * 5, max_len=5) == "😀" * 5
    refused(lambda v: clean_text("f", v, max_len=5), "😀" * 6, "f")


@pytest.mark.parametrize("value", ["\x00", "a\x00", "\x00b", "a\x00b"])
def test_clean_text_refuses_nul_anywhere(value):
    err = refused(lambda v: clean_text("caption", v, max_len=100), value, "caption")
    assert "NUL" in err.message


# --- usernames --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("abc", "abc"),
        ("MiXeD.Case_1", "mixed.case_1"),
        ("ADMIN", "admin"),
        ("a" * 30, "a" * 30),
        ("..._", "..._"),
        ("007", "007"),
    ],
)
def test_username_accepted_and_lower_cased(raw, canonical):
    assert normalize_username(raw) == canonical


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "ab",  # too short
        "a" * 31,  # too long
        "has space",
        " abc",
        "abc ",
        "abc\n",  # a trailing newline must not slip past `$`
        "ab-c",
        "a@b.c",
        "ab😀",  # emoji
        "ab\u200bc",  # zero-width space
        "ab\u200dc",  # zero-width joiner
        "ab\ufeffc",  # BOM / zero-width no-break space
        "\u0430dmin",  # Cyrillic а
        "p\u0430ypal",
        "\u212aelvin",  # KELVIN SIGN lower-cases to ASCII k
        "\u212a" * 3,
        "\u0130stanbul",  # İ lower-cases to i + combining dot
        "ｆｕｌｌｗｉｄｔｈ",  # fullwidth letters (NFKC would fold them)
        "ab\x00c",
        "a\u0301bc",  # combining accent
        "abç",
        "١٢٣",  # Arabic-Indic digits
    ],
)
def test_username_refused(raw):
    refused(normalize_username, raw, "username")


def test_username_error_names_the_given_field():
    refused(lambda v: normalize_username(v, field="login"), "x", "login")


# --- display name, bio, e-mail, password ------------------------------------------------


def test_display_name_limits():
    assert clean_display_name("Zoë") == "Zoë"
    assert clean_display_name("  padded  ") == "padded"
    assert clean_display_name("x" * 50) == "x" * 50
    assert clean_display_name("😀" * 50) == "😀" * 50
    assert clean_display_name("e\u0301" * 50) == "é" * 50  # 100 code points before NFC
    for bad in ("", "   ", "x" * 51, "😀" * 51, "a\x00b"):
        refused(clean_display_name, bad, "displayName")


def test_display_name_is_nfc():
    assert clean_display_name("Zoe\u0308") == "Zoë"
    assert len(clean_display_name("Zoe\u0308")) == 3


def test_bio_limits():
    assert clean_bio("") == ""
    assert clean_bio("x" * BIO_MAX) == "x" * 150
    assert clean_bio("e\u0301" * 150) == "é" * 150
    refused(clean_bio, "x" * 151, "bio")
    refused(clean_bio, "e\u0301" * 151, "bio")
    refused(clean_bio, "fine\x00", "bio")


def test_email_rules():
    assert clean_email("  Someone@Example.ORG ") == "someone@example.org"
    for bad in ("", "no-at-sign", "a@b", "@example.org", "a@@example.org", "a b@c.de", "a\x00@b.c"):
        refused(clean_email, bad, "email")


def test_password_length():
    assert check_password("x" * 8) == "x" * 8
    assert check_password("x" * 256) == "x" * 256
    for bad in ("", "x" * 7, "x" * 257, "passw\x00rd"):
        refused(check_password, bad, "password")


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ("https://Example.COM/Path?q=1#Top", "https://example.com/Path?q=1#Top"),
        ("  http://blog.example.org  ", "http://blog.example.org"),
        ("https://xn--bcher-kva.example:8443/", "https://xn--bcher-kva.example:8443/"),
        ("", None),
        ("   ", None),
    ],
)
def test_a_website_is_an_http_link_on_a_public_host(value, stored) -> None:
    assert clean_website(value) == stored


@pytest.mark.parametrize(
    "value",
    [
        "javascript:alert(1)",
        "JAVASCRIPT:alert(1)",
        "vbscript:msgbox",
        "data:text/html;base64,PGI+",
        "file:///etc/passwd",
        "//example.com",
        "example.com",
        "https://",
        "https://user@example.com",
        "https://10.0.0.1/",
        "https://[::1]/",
        "https://localhost/",
        "https://bücher.example/",
        "https://example.com:port/",
        "https://example.com/\u202e",
        "https://exa\tmple.com/",
        "https://example.com/a\u200bb",
        "https://" + "a" * 200 + ".com",
    ],
)
def test_a_website_that_is_not_one_is_refused(value) -> None:
    refused(clean_website, value, "website")
