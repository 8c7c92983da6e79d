"""Private accounts under real concurrency: every test fires its mutations at once through
the GraphQL API (asyncio.gather over the ASGI app; each request is its own transaction on
its own pooled connection), then checks the rows, the outbox and the counters."""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from tests.support.actions import counts, make_private, ok
from tests.support.checks import live_rows, no_follow_count_drift, pending_requests
from tests.support.documents import APPROVE, BLOCK, FOLLOW_OR_REQUEST, REJECT, SET_PRIVATE


async def follow_created_events(engine, target) -> int:
    async with engine.connect() as conn:
        return await conn.scalar(
            text(
                "SELECT count(*) FROM outbox WHERE topic = 'follow.created'"
                " AND payload->>'followee_id' = :t"
            ),
            {"t": str(target.id)},
        )


async def test_approvals_racing_the_switch_to_public_count_each_follow_once(
    gql, make_users, engine
):
    (owner,) = await make_users(1, prefix="race")
    fans = await make_users(40, prefix="fan")
    await make_private(gql, owner)
    await asyncio.gather(
        *(ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, f, "FollowRequestedSuccess") for f in fans)
    )
    assert len(await pending_requests(engine, owner)) == 40

    async def approve(fan):
        out = await gql(APPROVE, {"id": fan.gid}, token=owner.token)
        assert "errors" not in out, out
        # Approved here, or already accepted by the switch: both are a success.
        assert out["data"]["approveFollowRequest"]["__typename"] == "ApproveFollowRequestSuccess"

    approvals = [approve(f) for f in fans]
    switches = [ok(gql, SET_PRIVATE, {"p": False}, owner, "UpdateProfileSuccess") for _ in range(3)]
    await asyncio.gather(*approvals[:20], *switches, *approvals[20:])

    assert await counts(gql, owner) == (40, 0)
    assert await live_rows(engine, owner.id) == 40
    assert await follow_created_events(engine, owner) == 40
    assert await pending_requests(engine, owner) == []
    await no_follow_count_drift(engine)
    async with engine.connect() as conn:  # one transaction, one created_at: the switch's
        batches = await conn.scalar(
            text("SELECT count(DISTINCT created_at) FROM follows WHERE followee_id = :o"),
            {"o": owner.id},
        )
    print(f"\n40 follows written by {batches} transactions (approvals and the switch)")


async def test_requests_racing_the_switch_to_public_all_end_as_follows(gql, make_users, engine):
    """A request committed before the switch is accepted by it; a follow after it is a
    plain follow: no request is left behind, whatever the interleaving."""
    (owner,) = await make_users(1, prefix="race")
    early = await make_users(15, prefix="fan")
    late = await make_users(25, prefix="fan")
    await make_private(gql, owner)
    await asyncio.gather(
        *(ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, f, "FollowRequestedSuccess") for f in early)
    )

    async def follow(fan):
        out = await gql(FOLLOW_OR_REQUEST, {"id": owner.gid}, token=fan.token)
        assert "errors" not in out, out
        kind = out["data"]["follow"]["__typename"]
        assert kind in ("FollowSuccess", "FollowRequestedSuccess"), out

    follows = [follow(f) for f in early + late]  # early ones ask again: idempotent
    switch = ok(gql, SET_PRIVATE, {"p": False}, owner, "UpdateProfileSuccess")
    await asyncio.gather(*follows[:20], switch, *follows[20:])

    assert await pending_requests(engine, owner) == []
    assert await counts(gql, owner) == (40, 0)
    assert await live_rows(engine, owner.id) == 40
    assert await follow_created_events(engine, owner) == 40
    await no_follow_count_drift(engine)


async def test_one_request_approved_and_rejected_many_times_at_once(gql, make_users, engine):
    owner, fan, other = await make_users(3, prefix="race")
    await make_private(gql, owner)
    await asyncio.gather(
        *(
            ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, fan, "FollowRequestedSuccess")
            for _ in range(10)
        )
    )
    await ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, other, "FollowRequestedSuccess")
    assert sorted(await pending_requests(engine, owner)) == sorted([fan.id, other.id])
    async with engine.connect() as conn:
        created = await conn.scalar(
            text(
                "SELECT count(*) FROM outbox WHERE topic = 'follow_request.created'"
                " AND payload->>'target_id' = :t"
            ),
            {"t": str(owner.id)},
        )
    assert created == 2

    outs = await asyncio.gather(
        *(gql(APPROVE, {"id": fan.gid}, token=owner.token) for _ in range(10)),
        *(gql(REJECT, {"id": other.gid}, token=owner.token) for _ in range(5)),
        *(gql(APPROVE, {"id": other.gid}, token=owner.token) for _ in range(5)),
    )
    kinds = [next(iter(o["data"].values()))["__typename"] for o in outs]
    assert kinds[:10] == ["ApproveFollowRequestSuccess"] * 10
    # `other`: exactly one of the rejections and approvals took the request.
    rejected = kinds[10:15].count("RejectFollowRequestSuccess")
    approved = kinds[15:].count("ApproveFollowRequestSuccess")
    assert rejected + (approved > 0) == 1, kinds
    assert await counts(gql, owner) == (1 + (approved > 0), 0)
    assert await follow_created_events(engine, owner) == 1 + (approved > 0)
    assert await pending_requests(engine, owner) == []
    await no_follow_count_drift(engine)


async def test_blocks_racing_approvals_and_the_switch_leave_no_follow_across_a_block(
    gql, make_users, engine
):
    (owner,) = await make_users(1, prefix="race")
    fans = await make_users(30, prefix="fan")
    await make_private(gql, owner)
    await asyncio.gather(
        *(ok(gql, FOLLOW_OR_REQUEST, {"id": owner.gid}, f, "FollowRequestedSuccess") for f in fans)
    )
    blockers, approved = fans[:10], fans[10:20]  # fans[20:] wait for the switch

    async def block(fan):  # half block the owner, half are blocked by the owner
        actor, target = (fan, owner) if fans.index(fan) % 2 else (owner, fan)
        await ok(gql, BLOCK, {"id": target.gid}, actor, "BlockSuccess")

    async def approve(fan, *also: str):
        out = await gql(APPROVE, {"id": fan.gid}, token=owner.token)
        kind = out["data"]["approveFollowRequest"]["__typename"]
        assert kind in ("ApproveFollowRequestSuccess", *also), out

    await asyncio.gather(
        *(block(f) for f in blockers),
        *(approve(f) for f in approved),
        ok(gql, SET_PRIVATE, {"p": False}, owner, "UpdateProfileSuccess"),
        # Approving a fan who is blocking at that moment: before the block it is a follow
        # that the block then ends; after it there is no request (NotFound).
        *(approve(f, "NotFoundError") for f in blockers),
    )

    async with engine.connect() as conn:
        across = await conn.scalar(
            text(
                "SELECT count(*) FROM follows f JOIN blocks b"
                " ON (b.blocker_id = f.follower_id AND b.blocked_id = f.followee_id)"
                " OR (b.blocker_id = f.followee_id AND b.blocked_id = f.follower_id)"
                " WHERE f.deleted_at IS NULL AND :o IN (f.follower_id, f.followee_id)"
            ),
            {"o": owner.id},
        )
    assert across == 0
    assert await pending_requests(engine, owner) == []
    assert await counts(gql, owner) == (20, 0)
    await no_follow_count_drift(engine)
