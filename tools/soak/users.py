"""The virtual users: each signs up, then follows, unfollows, posts, deletes, likes,
comments, blocks and pages its feed at random through the GraphQL API, recording every
answer (:mod:`tools.soak.record`) and every acknowledged state (:mod:`tools.soak.world`);
some also hold a ``feedItemAdded`` subscription over WebSocket."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import uuid
from dataclasses import dataclass
from typing import Any

import httpx
from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException
from websockets.typing import Subprotocol

from tools.soak.record import Outcome, Recorder, ask, call, now, pk
from tools.soak.world import Account, World

PASSWORD = "soak-password-1234"
TIMEOUT_S = 30.0
#: A write left unanswered (503, a cut connection, its key in flight) is sent again
#: under the same Idempotency-Key after Retry-After, for up to this long.
RETRY_FOR_S = 45.0
#: The ``__typename`` _gql gives a write answered PAYLOAD_UNAVAILABLE: it committed, its
#: payload could not be read back (docs/api/errors.md).
SAVED = "PAYLOAD_UNAVAILABLE"

SIGN_UP = """mutation($u: String!, $e: String!, $p: String!) {
  signUp(input: { username: $u, email: $e, password: $p, displayName: $u }) { __typename
    ... on SignUpSuccess { accessToken user { id } } ... on Error { code } } }"""
LOG_IN = """mutation($u: String!, $p: String!) { logIn(input: { username: $u, password: $p }) {
  __typename ... on LogInSuccess { accessToken user { id } } ... on Error { code } } }"""
CREATE = """mutation($c: String!) { createPost(input: { caption: $c }) { __typename
  ... on CreatePostSuccess { post { id } } ... on Error { code } } }"""
DELETE = """mutation($id: ID!) { deletePost(input: { postId: $id }) { __typename
  ... on Error { code } } }"""
FOLLOW = """mutation($id: ID!) { follow(input: { userId: $id }) { __typename
  ... on Error { code } } }"""
UNFOLLOW = """mutation($id: ID!) { unfollow(input: { userId: $id }) { __typename
  ... on Error { code } } }"""
BLOCK = """mutation($id: ID!) { block(input: { userId: $id }) { __typename
  ... on Error { code } } }"""
UNBLOCK = """mutation($id: ID!) { unblock(input: { userId: $id }) { __typename
  ... on Error { code } } }"""
LIKE = """mutation($id: ID!) { likePost(input: { postId: $id }) { __typename
  ... on Error { code } } }"""
UNLIKE = """mutation($id: ID!) { unlikePost(input: { postId: $id }) { __typename
  ... on Error { code } } }"""
COMMENT = """mutation($id: ID!, $b: String!) { addComment(input: { postId: $id, body: $b }) {
  __typename ... on AddCommentSuccess { comment { id } } ... on Error { code } } }"""
FEED = """query($first: Int!, $after: String) { viewer { feed(first: $first, after: $after) {
  edges { node { id author { username } likeCount viewerHasLiked } }
  pageInfo { hasNextPage endCursor } } } }"""
FEED_SUB = "subscription { feedItemAdded { id author { username } } }"


@dataclass
class Load:
    """The users' shared knobs: mean think time between actions (s)."""

    think_s: float = 1.0


def client(base_url: str) -> httpx.AsyncClient:
    """A user's HTTP client; it drops an idle connection before the server's keep-alive
    timeout (uvicorn's 5 s) can close it under a request being sent."""
    limits = httpx.Limits(keepalive_expiry=3.0)
    return httpx.AsyncClient(base_url=base_url, timeout=TIMEOUT_S, limits=limits)


async def sign_up(http: httpx.AsyncClient, rec: Recorder, world: World, name: str) -> Account:
    """Sign ``name`` up (logging in instead when an unanswered sign-up went through);
    retries until it works."""
    email = f"{name}@soak.example"
    while True:
        data = await call(http, rec, "signUp", SIGN_UP, {"u": name, "e": email, "p": PASSWORD})
        payload = (data or {}).get("signUp") or {}
        if payload.get("__typename") == "SignUpSuccess":
            break
        if payload.get("code") in ("USERNAME_TAKEN", "EMAIL_TAKEN"):
            data = await call(http, rec, "logIn", LOG_IN, {"u": name, "p": PASSWORD})
            payload = (data or {}).get("logIn") or {}
            if payload.get("__typename") == "LogInSuccess":
                break
        await asyncio.sleep(1.0)
    account = Account(
        index=len(world.accounts),
        username=name,
        id=pk(payload["user"]["id"]),
        gid=payload["user"]["id"],
        token=payload["accessToken"],
    )
    world.accounts.append(account)
    return account


class VirtualUser:
    def __init__(
        self, me: Account, world: World, rec: Recorder, http: httpx.AsyncClient, load: Load
    ) -> None:
        self.me, self.world, self.rec, self.http, self.load = me, world, rec, http, load
        self.rng = random.Random(me.index)
        self.seen: list[str] = []  # post ids seen in the feed, newest last
        self.after: str | None = None
        self.n = 0

    async def run(self, stop: asyncio.Event) -> None:
        actions = [
            (self.post, 14), (self.delete, 4), (self.follow, 14), (self.unfollow, 4),
            (self.like, 14), (self.unlike, 4), (self.comment, 8), (self.feed, 26),
            (self.block, 1), (self.unblock, 1),
        ]  # fmt: skip
        fns = [a for a, _ in actions]
        weights = [w for _, w in actions]
        while not stop.is_set():
            await self.rng.choices(fns, weights)[0]()
            with contextlib.suppress(TimeoutError):
                pause = self.rng.expovariate(1 / self.load.think_s)
                await asyncio.wait_for(stop.wait(), min(pause, 5 * self.load.think_s))

    async def _gql(self, op: str, query: str, variables: dict[str, Any]) -> dict[str, Any] | None:
        """The write's payload (``data[op]``) once answered (``{"__typename": SAVED}``
        when it committed without a payload), else None: sent with an Idempotency-Key,
        and again under it while unanswered, for RETRY_FOR_S."""
        key = str(uuid.uuid4())
        give_up = now() + RETRY_FOR_S
        while True:
            answer = await ask(self.http, self.rec, op, query, variables, self.me.token, key)
            if answer.data is not None:
                return answer.data.get(op)
            if answer.code == f"200 {SAVED}":
                return {"__typename": SAVED}
            if not answer.retryable or now() + answer.retry_after > give_up:
                return None
            await asyncio.sleep(answer.retry_after)

    def _other(self) -> int | None:
        others = [a.index for a in self.world.accounts if a.index != self.me.index]
        return self.rng.choice(others) if others else None

    async def post(self) -> None:
        self.n += 1
        caption = f"soak {self.me.username} #{self.n} {uuid.uuid4().hex[:6]}"
        out = await self._gql("createPost", CREATE, {"c": caption})
        if out and out.get("__typename") == "CreatePostSuccess":
            self.world.posts[out["post"]["id"]] = (self.me.index, True)

    async def delete(self) -> None:
        mine = self.world.live_posts(self.me.index)
        if not mine:
            return await self.post()
        post = self.rng.choice(mine)
        out = await self._gql("deletePost", DELETE, {"id": post})
        if out is None:
            self.world.posts[post] = (self.me.index, None)
        elif out.get("__typename") in ("DeletePostSuccess", SAVED):
            self.world.posts[post] = (self.me.index, False)

    async def _pair_write(self, op: str, query: str, other: int, success: str) -> bool | None:
        """A follow-graph write on (me, other), its caller holding the pair's lock: True
        if it succeeded, False if refused with a typed error, None if unanswered."""
        out = await self._gql(op, query, {"id": self.world.accounts[other].gid})
        if out is None:
            return None
        return out.get("__typename") in (success, SAVED)

    async def follow(self) -> None:
        other = self._other()
        if other is None:
            return
        async with self.world.pair(self.me.index, other):
            done = await self._pair_write("follow", FOLLOW, other, "FollowSuccess")
            if done is None:
                self.world.follows[(self.me.index, other)] = None
            elif done:
                self.world.follows[(self.me.index, other)] = True

    async def unfollow(self) -> None:
        following = self.world.following(self.me.index)
        if not following:
            return await self.follow()
        other = self.rng.choice(following)
        async with self.world.pair(self.me.index, other):
            done = await self._pair_write("unfollow", UNFOLLOW, other, "UnfollowSuccess")
            self.world.follows[(self.me.index, other)] = None if done is None else False

    async def block(self) -> None:
        other = self._other()
        if other is None:
            return
        me = self.me.index
        async with self.world.pair(me, other):
            done = await self._pair_write("block", BLOCK, other, "BlockSuccess")
            if done is None:
                self.world.blocks[(me, other)] = None
                self.world.follows[(me, other)] = self.world.follows[(other, me)] = None
            elif done:
                self.world.block(me, other)

    async def unblock(self) -> None:
        blocked = [b for (a, b), on in self.world.blocks.items() if a == self.me.index and on]
        if not blocked:
            return
        other = self.rng.choice(blocked)
        async with self.world.pair(self.me.index, other):
            done = await self._pair_write("unblock", UNBLOCK, other, "UnblockSuccess")
            self.world.blocks[(self.me.index, other)] = None if done is None else False

    def _a_post(self) -> str | None:
        pool = self.seen[-50:] or self.world.live_posts()
        return self.rng.choice(pool) if pool else None

    async def like(self, query: str = LIKE, op: str = "likePost", on: bool = True) -> None:
        post = self._a_post()
        if post is None:
            return
        out = await self._gql(op, query, {"id": post})
        key = (self.me.index, post)
        if out is None:
            self.world.likes[key] = None
        elif out.get("__typename", "").endswith("Success") or out.get("__typename") == SAVED:
            self.world.likes[key] = on

    async def unlike(self) -> None:
        await self.like(UNLIKE, "unlikePost", on=False)

    async def comment(self) -> None:
        post = self._a_post()
        if post is None:
            return
        body = f"re {self.me.username} {uuid.uuid4().hex[:8]}"
        out = await self._gql("addComment", COMMENT, {"id": post, "b": body})
        if out and out.get("__typename") == "AddCommentSuccess":
            self.world.comments[out["comment"]["id"]] = (post, self.me.index)

    async def feed(self) -> None:
        """A page of the home feed: the first, or (a third of the time) the next one."""
        after = self.after if self.after and self.rng.random() < 0.33 else None
        data = await call(
            self.http, self.rec, "feed", FEED, {"first": 10, "after": after}, self.me.token
        )
        if data is None:
            return
        page = data["viewer"]["feed"]
        self.seen += [e["node"]["id"] for e in page["edges"]]
        del self.seen[:-200]
        info = page["pageInfo"]
        self.after = info["endCursor"] if info["hasNextPage"] else None


async def subscriber(ws_url: str, me: Account, rec: Recorder, stop: asyncio.Event) -> int:
    """Hold a feedItemAdded subscription (graphql-transport-ws) until ``stop``, opening
    it again whenever it ends; every error message, completion and close is recorded
    (op ``subscription``). Returns the events received."""
    events = 0
    while not stop.is_set():
        started = now()
        try:
            async with connect(
                ws_url, subprotocols=[Subprotocol("graphql-transport-ws")], open_timeout=TIMEOUT_S
            ) as ws:
                init = {
                    "type": "connection_init",
                    "payload": {"authorization": f"Bearer {me.token}"},
                }
                await ws.send(json.dumps(init))
                ack = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT_S))
                if ack.get("type") != "connection_ack":
                    rec.add(Outcome("subscription", started, now(), "ws refused"), str(ack))
                    await asyncio.sleep(1.0)
                    continue
                sub = {"id": "1", "type": "subscribe", "payload": {"query": FEED_SUB}}
                await ws.send(json.dumps(sub))
                events += await _events(ws, rec, stop)
        except (OSError, TimeoutError, WebSocketException) as exc:
            rec.add(Outcome("subscription", started, now(), f"conn {type(exc).__name__}"))
        if not stop.is_set():
            await asyncio.sleep(0.5)
    return events


async def _events(ws: Any, rec: Recorder, stop: asyncio.Event) -> int:
    """Read the subscription's messages until it ends or ``stop``; the events received."""
    events = 0
    stopping = asyncio.create_task(stop.wait())
    try:
        while True:
            receive = asyncio.create_task(ws.recv())
            await asyncio.wait({receive, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not receive.done():
                receive.cancel()
                return events
            msg = json.loads(receive.result())
            t = now()
            if msg.get("type") == "ping":
                await ws.send(json.dumps({"type": "pong"}))
            elif msg.get("type") == "next" and not msg["payload"].get("errors"):
                events += 1
            elif msg.get("type") in ("next", "error"):
                payload = msg["payload"]
                errors = payload.get("errors") if isinstance(payload, dict) else payload
                code = ((errors or [{}])[0].get("extensions") or {}).get("code", "none")
                rec.add(Outcome("subscription", t, t, f"ws {code}"), json.dumps(msg))
            elif msg.get("type") == "complete":
                rec.add(Outcome("subscription", t, t, "ws complete"), json.dumps(msg))
                return events
    finally:
        stopping.cancel()
