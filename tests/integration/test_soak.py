"""The soak (``make soak``, ``tools/soak``): a short run of it passes its audit, and
its checks do fail on what they look for.

The short run is the whole soak made small: 5 users, 12 s of load, one fault of each
kind (worker and API process SIGKILLed, PostgreSQL stopped ``-m immediate``, Redis
flushed and restarted) against ``roost serve --workers 2`` and ``roost worker`` on
servers of its own in a temporary folder (the shared ones are never stopped). It takes
a minute or two, so it is marked ``soak``: ``make test PYTEST_ARGS="-m soak"`` runs it."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import new_id
from tools.soak import audit
from tools.soak.faults import API, POSTGRES, Fault
from tools.soak.record import Outcome, Recorder, gid
from tools.soak.run import Config, soak
from tools.soak.world import Account, World


@pytest.mark.soak  # 1-2 minutes: outside `make test`
async def test_a_short_soak_with_one_fault_of_each_kind_passes_its_audit() -> None:
    # No subscribers: whether an event reaches one during a 1.5 s outage is chance, so
    # a run this short cannot check how subscriptions ride out a fault (make soak does).
    report = await soak(
        Config(seconds=12, users=5, subscribers=0, each=1, outage_s=1.5, warm_up=2, think_s=0.5)
    )
    text = report.text()
    print(text)
    assert [f.kind for f in report.faults if f.recovered] == [
        "worker SIGKILL",
        "API process SIGKILL",
        "PostgreSQL stop -m immediate",
        "Redis restart + flush",
    ], text
    assert report.passed, text
    # Something ran: the users wrote and read, the audit walked their feeds.
    ops = {o.op for o in report.rec.outcomes if o.ok}
    assert {"createPost", "follow", "feed", "audit feed"} <= ops, ops


async def test_the_audit_finds_a_lost_write(engine: AsyncEngine) -> None:
    """An acknowledged post or follow that PostgreSQL does not hold fails the check."""
    world = World()
    ghost = uuid.uuid4()
    world.accounts = [
        Account(0, "ghost_a", ghost, gid("User", ghost), ""),
        Account(1, "ghost_b", uuid.uuid4(), gid("User", uuid.uuid4()), ""),
    ]
    world.posts[gid("Post", uuid.uuid4())] = (0, True)
    world.follows[(0, 1)] = True
    check = await audit.acknowledged_writes(engine, world)
    assert not check.passed
    assert "signUp ghost_a missing" in check.detail
    assert "acknowledged, missing" in check.detail
    assert "follow ghost_a->ghost_b: acknowledged True" in check.detail


async def test_the_audit_finds_a_write_applied_twice(engine: AsyncEngine, make_users) -> None:
    """A post written twice (a retry that ran again) fails the check; one alone does not."""
    (user,) = await make_users(1)
    world = World()
    world.accounts = [Account(0, user.username, user.id, user.gid, user.token)]
    async with engine.begin() as conn:
        for caption in ("once", "twice", "twice"):
            await conn.execute(
                text("INSERT INTO posts (id, author_id, caption) VALUES (:i, :a, :c)"),
                {"i": new_id(), "a": user.id, "c": caption},
            )
    check = await audit.applied_once(engine, world)
    assert not check.passed
    assert "posts: 'twice' x2" in check.detail and "'once'" not in check.detail


def test_the_audit_finds_a_500_and_failures_outside_a_fault() -> None:
    rec = Recorder()
    fault = Fault(POSTGRES, 0.0, started=10.0, restored=14.0, recovered=15.0)
    killed = Fault(API, 0.0, started=30.0, restored=30.5, recovered=31.0)
    rec.add(Outcome("feed", 11.0, 12.0, "503 SERVICE_UNAVAILABLE"))  # explained
    rec.add(Outcome("likePost", 12.0, 12.5, "200 INTERNAL_SERVER_ERROR"))  # never
    rec.add(Outcome("follow", 40.0, 40.1, "503 SERVICE_UNAVAILABLE"))  # no fault then
    rec.add(Outcome("feed", 13.0, 13.1, "conn ReadError"))  # not an API kill
    rec.add(Outcome("feed", 30.2, 30.3, "conn RemoteProtocolError"))  # the API kill
    rec.add(Outcome("follow", 13.0, 13.1, "200 SERVICE_UNAVAILABLE"))  # a stored 503 replayed
    checks = {c.name: c for c in audit.answers(rec, [fault, killed])}
    replayed = checks["SERVICE_UNAVAILABLE only as a 503 with Retry-After"]
    assert not replayed.passed and "200 SERVICE_UNAVAILABLE x1" in replayed.detail
    assert "200 INTERNAL_SERVER_ERROR x1" in checks["no 500 / internal error"].detail
    outside = checks["no failure outside a fault"]
    assert not outside.passed and "follow: 503 SERVICE_UNAVAILABLE x1" in outside.detail
    cut = checks["no cut connection but a killed API process"]
    assert not cut.passed and "conn ReadError x1" in cut.detail
    assert "RemoteProtocolError" not in cut.detail
    rec.add(Outcome("subscription", 12.0, 12.0, "ws BAD_USER_INPUT"))
    assert not audit.subscriptions(rec, 0).passed
