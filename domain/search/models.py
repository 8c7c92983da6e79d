"""The people search index (docs/api/search.md "User search"): ``user_search`` kept by triggers
(migration 0009), ``search_words`` of display names."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Table, Text, Uuid, text

from domain.db import metadata

user_search = Table(
    "user_search",
    metadata,
    Column("user_id", Uuid, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    # Byte order ("C"): a username prefix is one index range [prefix, prefix + 1).
    Column("username", Text(collation="C"), nullable=False),
    Column("name", Text(collation="C"), nullable=False),
    Column("followers", BigInteger, nullable=False, server_default=text("0")),
    # Exact usernames and username prefixes, index-only with the ranking signal.
    Index("user_search_username_idx", "username", postgresql_include=["followers", "user_id"]),
    # Exact display names.
    Index("user_search_name_idx", "name"),
    # Display-name words typed as prefixes ("ali" finds "Bob Alice").
    Index(
        "user_search_name_words_idx",
        text("to_tsvector('simple'::regconfig, name)"),
        postgresql_using="gin",
    ),
    # Username typos (pg_trgm similarity).
    Index(
        "user_search_username_trgm_idx",
        "username",
        postgresql_using="gin",
        postgresql_ops={"username": "gin_trgm_ops"},
    ),
    # The most followed first: a match as common as "sd" reads ~limit rows this way.
    Index("user_search_followers_idx", text("followers DESC"), "user_id"),
)

#: Distinct display-name words that pg_trgm corrects typos against (only added to).
search_words = Table(
    "search_words",
    metadata,
    Column("word", Text(collation="C"), primary_key=True),
    Index(
        "search_words_trgm_idx",
        "word",
        postgresql_using="gin",
        postgresql_ops={"word": "gin_trgm_ops"},
    ),
)
