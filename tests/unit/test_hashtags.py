"""Hashtag extraction keeps ZWNJ/ZWJ inside a tag (UAX #31 hashtag identifiers)."""

from __future__ import annotations

from domain.engagement.hashtags import extract_hashtags, tag_named

SOFTWARE = "نرم\u200cافزار"  # Persian "software": a ZWNJ between its two parts


def test_a_zero_width_non_joiner_stays_inside_a_tag():
    assert extract_hashtags(f"سلام #{SOFTWARE} دنیا") == [SOFTWARE]
    assert tag_named(f"#{SOFTWARE}") == SOFTWARE
    assert extract_hashtags("#ab\u200dcd") == ["ab\u200dcd"]  # a ZWJ likewise


def test_a_joiner_only_between_tag_characters():
    assert extract_hashtags("#abc\u200c end") == ["abc"]  # trailing: not part of it
    assert extract_hashtags("#\u200cabc") == []  # leading: no tag at all
    assert extract_hashtags("#ab\u200c\u200ccd") == ["ab"]  # two in a row: the tag ends
    assert tag_named("abc\u200c") is None
