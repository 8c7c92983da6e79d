"""User search (pg_trgm, unaccent, a search table kept by triggers) and push device tokens.

Revision ID: 0009
Revises: 0005
Create Date: 2026-11-30
"""
import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0005"
branch_labels = None
depends_on = None

# How names are folded for matching; the search statement folds the query the same way.
SEARCH_FOLD = """
CREATE FUNCTION search_fold(value text) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT lower(unaccent(value)) $$
"""

# A display-name query as a tsquery: each word of it, folded, as a prefix ("ali bo" ->
# 'ali':* & 'bo':*); the words are the lexemes the same parser finds in names.
PREFIX_QUERY = """
CREATE FUNCTION search_prefix_query(value text) RETURNS tsquery
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT to_tsquery('simple', string_agg('''' || replace(l, '''', '''''') || ''':*', ' & '))
    FROM unnest(tsvector_to_array(to_tsvector('simple', search_fold(value)))) AS l
$$
"""

# A display-name query with its typos corrected (pg_trgm's "text search integration"):
# each word of it, as a prefix or as one of the 5 known name words most similar to it
# (search_words, similarity at least 0.3, pg_trgm's default: a swap of two letters in
# an 8-letter word scores 0.38).
FUZZY_QUERY = """
CREATE FUNCTION search_fuzzy_query(value text) RETURNS tsquery
LANGUAGE sql STABLE PARALLEL SAFE
SET pg_trgm.similarity_threshold = 0.3
AS $$
    SELECT to_tsquery('simple', string_agg(alternatives, ' & '))
    FROM (
        SELECT '(' || concat_ws(' | ',
            '''' || replace(q.w, '''', '''''') || ''':*',
            (SELECT string_agg('''' || replace(c.word, '''', '''''') || '''', ' | ')
             FROM (SELECT word FROM search_words WHERE word % q.w
                   ORDER BY similarity(word, q.w) DESC, word LIMIT 5) AS c)) || ')'
        FROM unnest(tsvector_to_array(to_tsvector('simple', search_fold(value)))) AS q(w)
    ) AS per_word(alternatives)
$$
"""

# Keep user_search equal to the active users, and search_words a superset of their
# names' words, in the writing transaction. Inserts are per statement (the graph
# loader inserts 82k users in one), updates per row and only when the username,
# display name or status changed.
SYNC_INSERT = """
CREATE FUNCTION user_search_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO user_search (user_id, username, name)
    SELECT n.id, n.username, search_fold(n.display_name) FROM new_users n
    WHERE n.status = 'active'
    ON CONFLICT (user_id) DO NOTHING;
    INSERT INTO search_words (word)
    SELECT DISTINCT w FROM new_users n,
        unnest(tsvector_to_array(to_tsvector('simple', search_fold(n.display_name)))) AS w
    WHERE n.status = 'active'
    ON CONFLICT (word) DO NOTHING;
    RETURN NULL;
END $$
"""

SYNC_UPDATE = """
CREATE FUNCTION user_search_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status <> 'active' THEN
        DELETE FROM user_search WHERE user_id = NEW.id;
    ELSE
        INSERT INTO user_search (user_id, username, name, followers)
        VALUES (NEW.id, NEW.username, search_fold(NEW.display_name), COALESCE((
            SELECT sum(value) FROM counter_shards
            WHERE entity_id = NEW.id AND kind = 'followers'), 0))
        ON CONFLICT (user_id) DO UPDATE
        SET username = EXCLUDED.username, name = EXCLUDED.name;
        INSERT INTO search_words (word)
        SELECT w FROM unnest(tsvector_to_array(
            to_tsvector('simple', search_fold(NEW.display_name)))) AS w
        ON CONFLICT (word) DO NOTHING;
    END IF;
    RETURN NULL;
END $$
"""


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    op.execute("CREATE EXTENSION IF NOT EXISTS unaccent")
    op.execute(SEARCH_FOLD)
    op.execute(PREFIX_QUERY)
    op.create_table(
        "user_search",
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("username", sa.Text(collation="C"), nullable=False),
        sa.Column("name", sa.Text(collation="C"), nullable=False),
        sa.Column("followers", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="user_search_user_id_fkey", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("user_id", name="user_search_pkey"),
    )
    op.execute(
        """
        INSERT INTO user_search (user_id, username, name, followers)
        SELECT u.id, u.username, search_fold(u.display_name), COALESCE(c.total, 0)
        FROM users u LEFT JOIN (
            SELECT entity_id, sum(value) AS total FROM counter_shards
            WHERE kind = 'followers' GROUP BY entity_id) c ON c.entity_id = u.id
        WHERE u.status = 'active'
        """
    )
    op.create_index(
        "user_search_username_idx", "user_search", ["username"],
        postgresql_include=["followers", "user_id"],
    )
    op.create_index("user_search_name_idx", "user_search", ["name"])
    op.create_index(
        "user_search_name_words_idx", "user_search",
        [sa.text("to_tsvector('simple'::regconfig, name)")], postgresql_using="gin",
    )
    op.create_index(
        "user_search_username_trgm_idx", "user_search", ["username"],
        postgresql_using="gin", postgresql_ops={"username": "gin_trgm_ops"},
    )
    op.create_index("user_search_followers_idx", "user_search", [sa.text("followers DESC"), "user_id"])

    op.create_table(
        "search_words",
        sa.Column("word", sa.Text(collation="C"), nullable=False),
        sa.PrimaryKeyConstraint("word", name="search_words_pkey"),
    )
    op.execute(
        """
        INSERT INTO search_words (word)
        SELECT DISTINCT w FROM user_search s,
            unnest(tsvector_to_array(to_tsvector('simple', s.name))) AS w
        """
    )
    op.create_index(
        "search_words_trgm_idx", "search_words", ["word"],
        postgresql_using="gin", postgresql_ops={"word": "gin_trgm_ops"},
    )
    op.execute(FUZZY_QUERY)
    op.execute("ANALYZE user_search")
    op.execute("ANALYZE search_words")

    op.execute(SYNC_INSERT)
    op.execute(SYNC_UPDATE)
    op.execute(
        "CREATE TRIGGER user_search_insert AFTER INSERT ON users"
        " REFERENCING NEW TABLE AS new_users"
        " FOR EACH STATEMENT EXECUTE FUNCTION user_search_insert()"
    )
    op.execute(
        "CREATE TRIGGER user_search_update AFTER UPDATE OF username, display_name, status"
        " ON users FOR EACH ROW"
        " WHEN ((OLD.username, OLD.display_name, OLD.status)"
        " IS DISTINCT FROM (NEW.username, NEW.display_name, NEW.status))"
        " EXECUTE FUNCTION user_search_update()"
    )

    op.create_table(
        "device_tokens",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.Uuid(), nullable=False),
        sa.Column("session_id", sa.Uuid(), nullable=False),
        sa.Column("platform", sa.Text(), nullable=False),
        sa.Column("token", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("registered_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.CheckConstraint("platform IN ('ios', 'android', 'web')", name="device_tokens_platform_known_check"),
        sa.CheckConstraint("length(token) BETWEEN 1 AND 4096", name="device_tokens_token_length_check"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="device_tokens_user_id_fkey", ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="device_tokens_pkey"),
    )
    op.create_index("device_tokens_token_key", "device_tokens", ["token"], unique=True)
    op.create_index("device_tokens_user_id_idx", "device_tokens", ["user_id"])
    op.create_index("device_tokens_session_id_idx", "device_tokens", ["session_id"])


def downgrade() -> None:
    op.drop_table("device_tokens")
    op.execute("DROP TRIGGER IF EXISTS user_search_update ON users")
    op.execute("DROP TRIGGER IF EXISTS user_search_insert ON users")
    op.execute("DROP FUNCTION IF EXISTS user_search_update()")
    op.execute("DROP FUNCTION IF EXISTS user_search_insert()")
    op.execute("DROP FUNCTION IF EXISTS search_fuzzy_query(text)")
    op.drop_table("search_words")
    op.drop_table("user_search")
    op.execute("DROP FUNCTION IF EXISTS search_prefix_query(text)")
    op.execute("DROP FUNCTION IF EXISTS search_fold(text)")
    # The extensions stay: other objects of the database may use them.
