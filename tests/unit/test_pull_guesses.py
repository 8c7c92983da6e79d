"""The per-process guesses of each reader's pull authors: bounded, least recently read first out."""

from __future__ import annotations

import uuid

from domain.feed.pull_guesses import PullAuthorGuesses


def test_keeps_the_last_list_of_the_most_recent_readers_only():
    a, b, c, x = (uuid.uuid4() for _ in range(4))
    guesses = PullAuthorGuesses(size=2)
    assert guesses.get(a) is None
    guesses.put(a, [x])
    guesses.put(b, [])
    assert guesses.get(a) == [x]  # read: a is now the most recent
    guesses.put(c, [x, x])
    assert len(guesses) == 2
    assert guesses.get(b) is None  # the least recently read went
    assert guesses.get(a) == [x] and guesses.get(c) == [x, x]
    guesses.put(a, [])  # a new list replaces the old
    assert guesses.get(a) == []


def test_a_kept_list_is_a_copy():
    reader, author = uuid.uuid4(), uuid.uuid4()
    guesses = PullAuthorGuesses()
    authors = [author]
    guesses.put(reader, authors)
    authors.clear()
    assert guesses.get(reader) == [author]
