"""``roost serve`` runs one API process per CPU unless told otherwise, without an access
log unless API_ACCESS_LOG asks for one (app/cli/servers.py)."""

from __future__ import annotations

import contextlib
import os

from app.cli import build_parser, servers
from app.settings import Settings


def settings(**env: object) -> Settings:
    return Settings(DATABASE_URL="postgresql://x@127.0.0.1:1/y", REDIS_URL=None, **env)


def test_workers_default_to_the_cpus_this_process_may_use():
    assert servers.api_workers(settings(), None) == len(os.sched_getaffinity(0))
    assert servers.api_workers(settings(API_WORKERS=3), None) == 3
    assert servers.api_workers(settings(API_WORKERS=3), 5) == 5
    assert servers.api_workers(settings(), 0) == 1


def test_serve_passes_the_workers_and_no_access_log(monkeypatch):
    calls = []

    @contextlib.contextmanager
    def no_services(s, fresh):
        yield None

    monkeypatch.setattr(servers, "services", no_services)
    monkeypatch.setattr(servers, "_use", lambda s, urls: s)
    monkeypatch.setattr(servers, "_serve", lambda s, **kw: calls.append(kw))
    args = build_parser().parse_args(["serve"])
    assert servers.cmd_serve(args, settings()) == 0
    args = build_parser().parse_args(["serve", "--workers", "2"])
    assert servers.cmd_serve(args, settings()) == 0
    assert calls == [
        {"workers": len(os.sched_getaffinity(0)), "access_log": False},
        {"workers": 2, "access_log": False},
    ]
