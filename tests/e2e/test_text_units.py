"""Text limits say their unit, code points, wherever a client reads them (schema, errors,
docs/api/), and names refuse bidirectional control characters (domain/text.py)."""

from __future__ import annotations

import pytest

from tests.support.documents import CREATE

UPDATE = """mutation($n: String!) { updateProfile(input: { displayName: $n }) {
  __typename ... on Error { code message } ... on ValidationError { field } } }"""
FIELD_DESCRIPTION = (
    """query($t: String!) { __type(name: $t) { inputFields { name description } } }"""
)


async def test_the_caption_limit_counts_code_points_and_says_so(gql, make_users):
    (me,) = await make_users(1)
    thumbs = "\U0001f44d\U0001f3fd"  # a thumbs-up with a skin tone: 2 code points
    out = await gql(CREATE, {"c": thumbs * 1100}, token=me.token)
    assert out["data"]["createPost"]["__typename"] == "CreatePostSuccess", out
    out = await gql(CREATE, {"c": thumbs * 1101}, token=me.token)
    result = out["data"]["createPost"]
    assert result["code"] == "VALIDATION_FAILED", result
    assert (
        result["message"] == "caption is 2202 code points; the limit is 2200 (Unicode code points)."
    ), result
    described = await gql(FIELD_DESCRIPTION, {"t": "CreatePostInput"})
    caption = next(f for f in described["data"]["__type"]["inputFields"] if f["name"] == "caption")
    assert "code points" in caption["description"]


@pytest.mark.parametrize(
    "name", ["\u202eevil\u202c", "a\u2066b\u2069", "x\u200fy", "\u061cname", "\u202atext"]
)
async def test_display_names_refuse_bidirectional_controls(gql, make_users, name):
    (me,) = await make_users(1)
    out = await gql(UPDATE, {"n": name}, token=me.token)
    result = out["data"]["updateProfile"]
    assert result["__typename"] == "ValidationError" and result["field"] == "displayName", result
    assert "bidirectional" in result["message"]
    profile = await gql("{ viewer { displayName } }", token=me.token)
    assert profile["data"]["viewer"]["displayName"] != name


async def test_right_to_left_names_without_controls_are_fine(gql, make_users):
    (me,) = await make_users(1)
    out = await gql(UPDATE, {"n": "نرم‌افزار עברית"}, token=me.token)
    assert out["data"]["updateProfile"]["__typename"] == "UpdateProfileSuccess", out
