"""The audit after the soak: each :class:`Check` passes or fails with what it saw."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections import Counter
from dataclasses import dataclass

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.feed.expected import expected_feed
from domain.visibility.predicates import is_live
from tools.soak.faults import API, Fault
from tools.soak.record import Outcome, Recorder, call, now, pk
from tools.soak.servers import Stack
from tools.soak.world import World

#: IDEMPOTENCY_LOCK_S (+ a margin): how long a key a killed process held stays in flight.
IDEMPOTENCY_LOCK_S = 35.0
#: Page size of the feed walks.
WALK_FIRST = 25
FEED_WALK = """query($first: Int!, $after: String) { viewer { feed(first: $first, after: $after) {
  edges { node { id } } pageInfo { hasNextPage endCursor } } } }"""


@dataclass
class Check:
    name: str
    passed: bool
    detail: str


async def outbox_drained(engine: AsyncEngine, within: float) -> Check:
    """Wait until every outbox event is dispatched (each consumer done)."""
    started = now()
    pending = -1
    while now() - started < within:
        async with engine.connect() as conn:
            pending = int(
                await conn.scalar(text("SELECT count(*) FROM outbox WHERE dispatched_at IS NULL"))
                or 0
            )
        if pending == 0:
            return Check("outbox drained", True, f"in {now() - started:.1f} s after the load")
        await asyncio.sleep(0.5)
    return Check("outbox drained", False, f"{pending} events undispatched after {within:.0f} s")


async def acknowledged_writes(engine: AsyncEngine, world: World) -> Check:
    """Every write the API acknowledged is in PostgreSQL, as its last answer left it."""
    wrong: list[str] = []
    checked = unknown = 0
    async with engine.connect() as conn:

        async def ids(sql: str) -> set[tuple[uuid.UUID, ...]]:
            return {tuple(r) for r in await conn.execute(text(sql))}

        users = {r[0] for r in await ids("SELECT id FROM users")}
        live_posts = {r[0] for r in await ids(f"SELECT id FROM posts WHERE {is_live()}")}
        all_posts = {r[0] for r in await ids("SELECT id FROM posts")}
        follows = await ids(f"SELECT follower_id, followee_id FROM follows WHERE {is_live()}")
        blocks = await ids("SELECT blocker_id, blocked_id FROM blocks")
        likes = await ids("SELECT user_id, post_id FROM likes")
        comments = {r[0] for r in await ids(f"SELECT id FROM comments WHERE {is_live()}")}
    acc = world.accounts
    for a in acc:
        checked += 1
        if a.id not in users:
            wrong.append(f"signUp {a.username} missing")
    for g, (_, live) in world.posts.items():
        if live is None:
            unknown += 1
            continue
        checked += 1
        p = pk(g)
        if live and p not in live_posts:
            wrong.append(f"post {p} acknowledged, {'deleted' if p in all_posts else 'missing'}")
        if not live and p in live_posts:
            wrong.append(f"post {p} acknowledged deleted, live")
    for (x, y), on in world.follows.items():
        unknown += on is None
        checked += on is not None
        if on is not None and ((acc[x].id, acc[y].id) in follows) != on:
            wrong.append(f"follow {acc[x].username}->{acc[y].username}: acknowledged {on}")
    for (x, y), on in world.blocks.items():
        unknown += on is None
        checked += on is not None
        if on is not None and ((acc[x].id, acc[y].id) in blocks) != on:
            wrong.append(f"block {acc[x].username}->{acc[y].username}: acknowledged {on}")
    author = {g: a for g, (a, _) in world.posts.items()}
    for (x, g), on in world.likes.items():
        by = author.get(g)
        if on is None or by is None or pk(g) not in live_posts or world.blocked_pair(x, by):
            unknown += 1
            continue
        checked += 1
        if ((acc[x].id, pk(g)) in likes) != on:
            wrong.append(f"like {acc[x].username} {pk(g)}: acknowledged {on}")
    for c, (g, x) in world.comments.items():
        by = author.get(g)
        if by is None or pk(g) not in live_posts or world.blocked_pair(x, by):
            unknown += 1
            continue
        checked += 1
        if pk(c) not in comments:
            wrong.append(f"comment {pk(c)} on {pk(g)} missing")
    detail = f"{checked} checked, {len(wrong)} wrong, {unknown} unknown (unanswered or moot)"
    return Check("acknowledged writes in PostgreSQL", not wrong, _with(detail, wrong))


async def applied_once(engine: AsyncEngine, world: World) -> Check:
    """No write happened twice: each post caption and comment body (unique as sent,
    retries included) is in PostgreSQL at most once."""
    ids = [a.id for a in world.accounts]
    twice: list[str] = []
    async with engine.connect() as conn:
        for table, column in (("posts", "caption"), ("comments", "body")):
            rows = await conn.execute(
                text(
                    f"SELECT {column}, count(*) FROM {table} WHERE author_id = ANY(:ids)"
                    f" GROUP BY {column} HAVING count(*) > 1"
                ),
                {"ids": ids},
            )
            twice += [f"{table}: {value!r} x{n}" for value, n in rows]
    return Check(
        "no write applied twice (retries under one Idempotency-Key)",
        not twice,
        _with(f"{len(twice)} written more than once", twice),
    )


async def counts_verify(stack: Stack) -> Check:
    """``roost counts verify``: exit 0, no drift."""
    proc = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "app.cli", "counts", "verify"],
        env=stack.env(),
        capture_output=True,
        text=True,
    )
    lines = (proc.stdout + proc.stderr).splitlines()
    said = [line for line in lines if "drift" in line] or lines[-3:]
    return Check(f"roost counts verify (exit {proc.returncode})", proc.returncode == 0, said[0])


async def feeds(stack: Stack, engine: AsyncEngine, world: World, rec: Recorder) -> Check:
    """Every account's feed walked through the API holds what SQL says it must, each
    post once: nothing missing, nothing deleted, unfollowed or blocked, no repeat."""
    wrong: list[str] = []
    items = 0
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=60) as http:
        for a in world.accounts:
            async with engine.connect() as conn:
                expected = await expected_feed(conn, a.id)
            walk: list[uuid.UUID] = []
            after: str | None = None
            while True:
                data = await call(
                    http, rec, "audit feed", FEED_WALK, {"first": WALK_FIRST, "after": after},
                    a.token,
                )  # fmt: skip
                if data is None:
                    wrong.append(f"{a.username}: a page failed")
                    break
                page = data["viewer"]["feed"]
                walk += [pk(e["node"]["id"]) for e in page["edges"]]
                if not page["pageInfo"]["hasNextPage"]:
                    break
                after = page["pageInfo"]["endCursor"]
            items += len(walk)
            got = set(walk)
            missing, extra, repeated = expected - got, got - expected, len(walk) - len(got)
            if missing or extra or repeated:
                wrong.append(
                    f"{a.username}: {len(missing)} missing, {len(extra)} unexpected"
                    f" ({await _why(engine, a.id, extra)}), {repeated} repeated"
                )
    detail = f"{len(world.accounts)} feeds walked ({items} items, pages of {WALK_FIRST})"
    return Check("every feed exactly its followed live posts", not wrong, _with(detail, wrong))


async def _why(engine: AsyncEngine, user: uuid.UUID, posts: set[uuid.UUID]) -> str:
    """Why each unexpected post should not be there: deleted, not followed, blocked."""
    if not posts:
        return "-"
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT p.deleted_at IS NOT NULL,"
                " EXISTS (SELECT 1 FROM follows f WHERE f.follower_id = :u"
                f"   AND f.followee_id = p.author_id AND {is_live('f')}),"
                " EXISTS (SELECT 1 FROM blocks b WHERE (b.blocker_id = :u AND"
                "   b.blocked_id = p.author_id)"
                "   OR (b.blocked_id = :u AND b.blocker_id = p.author_id))"
                " FROM posts p WHERE p.id = ANY(:ids)"
            ),
            {"u": user, "ids": list(posts)},
        )
        why: Counter[str] = Counter()
        for deleted, followed, blocked in rows:
            reasons = [("deleted", deleted), ("blocked", blocked), ("unfollowed", not followed)]
            why[next((name for name, true in reasons if true), "?")] += 1
    return ", ".join(f"{n} {k}" for k, n in why.items())


async def dead_letters(engine: AsyncEngine, faults: list[Fault]) -> Check:
    """Open dead letters; one is explained only if it was written during a fault."""
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT topic, consumer, error, extract(epoch FROM now() - created_at)"
                    " FROM dead_letters WHERE replayed_at IS NULL"
                )
            )
        ).all()
    t = now()
    lines, unexplained = [], 0
    for topic, consumer, error, age in rows:
        at = t - float(age)
        during = [f.kind for f in faults if f.window()[0] - 1 <= at <= f.window()[1] + 30]
        unexplained += not during
        lines.append(f"{topic}->{consumer} {' '.join(error.split())[:120]} (during: {during})")
    return Check(
        "no dead letter unexplained",
        unexplained == 0,
        _with(f"{len(rows)} open, {unexplained} written outside any fault", lines),
    )


def answers(rec: Recorder, faults: list[Fault]) -> list[Check]:
    """No 500 (nor masked internal error) anywhere; outside every fault's window no
    failure at all; a cut connection only when an API process was killed."""

    def in_window(o: Outcome, kinds: tuple[str, ...] | None = None) -> bool:
        return any(
            (kinds is None or f.kind in kinds)
            and f.window()[0] <= o.ended
            and o.started <= f.window()[1]
            for f in faults
        )

    def in_flight_after_kill(o: Outcome) -> bool:
        """A retry refused while the killed process's key stays pending (its lock)."""
        return o.code == "409 IDEMPOTENCY_KEY_IN_FLIGHT" and any(
            f.kind == API and f.started <= o.started <= f.started + IDEMPOTENCY_LOCK_S
            for f in faults
        )

    server = [o for o in rec.outcomes if o.server_error]
    outside = [
        o
        for o in rec.outcomes
        if not o.ok and not in_window(o) and o.op != "subscription" and not in_flight_after_kill(o)
    ]
    cut = [
        o for o in rec.outcomes
        if o.code.startswith("conn") and o.op != "subscription" and not in_window(o, (API,))
    ]  # fmt: skip
    unavailable = [
        o
        for o in rec.outcomes
        if "SERVICE_UNAVAILABLE" in o.code and o.code != "503 SERVICE_UNAVAILABLE"
        and o.op != "subscription"
    ]  # fmt: skip
    total = len(rec.outcomes)
    return [
        Check("no 500 / internal error", not server, _codes(server, rec, f"{total} answers")),
        Check(
            "SERVICE_UNAVAILABLE only as a 503 with Retry-After",
            not unavailable,
            _codes(unavailable, rec, ""),
        ),
        Check("no failure outside a fault", not outside, _codes(outside, rec, "")),
        Check("no cut connection but a killed API process", not cut, _codes(cut, rec, "")),
    ]


def subscriptions(rec: Recorder, events: int) -> Check:
    """Subscriptions end only as a fault explains: a socket cut, or SERVICE_UNAVAILABLE."""
    subs = [o for o in rec.outcomes if o.op == "subscription"]
    bad = [o for o in subs if o.code.startswith("ws") and o.code != "ws SERVICE_UNAVAILABLE"]
    seen = ", ".join(f"{k} {n}" for k, n in Counter(o.code for o in subs).most_common()) or "-"
    return Check(
        "subscriptions end only with SERVICE_UNAVAILABLE or a cut socket",
        not bad,
        _codes(bad, rec, f"{events} events received; ends: {seen}"),
    )


def _codes(outcomes: list[Outcome], rec: Recorder, head: str) -> str:
    counts = Counter((o.op, o.code) for o in outcomes)
    lines = [
        f"{op}: {code} x{n}  {rec.samples.get((op, code), '')[:200]}"
        for (op, code), n in counts.most_common(8)
    ]
    return _with(head or f"{len(outcomes)} answers", lines)


def _with(head: str, lines: list[str], most: int = 10) -> str:
    more = [f"... {len(lines) - most} more"] if len(lines) > most else []
    return "\n".join([head, *("    " + line for line in lines[:most]), *more])
